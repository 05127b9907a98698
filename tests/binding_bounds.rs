//! The bindings' input bounds (`skillcache-binding`'s `bounds`): a budget refuses the item and
//! the character past its bound, naming the input, and a length over the bound before any walk.

use skillcache_binding::bounds::{Budget, GRANT_TEXT, GRANT_VALUES, LIST_ITEMS, LIST_TEXT};

#[test]
fn a_list_budget_refuses_the_item_past_its_bound_naming_the_input() {
    let mut b = Budget::list("argv");
    for _ in 0..LIST_ITEMS {
        b.take(1).expect("within the bound");
    }
    let over = b.take(0).expect_err("one item too many").to_string();
    assert!(
        over.contains("argv") && over.contains("more than 65536 items"),
        "{over}"
    );
    assert!(Budget::list("env").fits(LIST_ITEMS + 1).is_err());
    assert!(Budget::list("env").fits(LIST_ITEMS).is_ok());
}

#[test]
fn a_budget_counts_text_so_one_string_referenced_many_times_is_refused() {
    // One 1 MiB string referenced 17 times: 17 items, far below the item bound, and 17 MiB.
    let mut b = Budget::list("headers");
    let refused = (0..17).map(|_| b.take(1 << 20)).find_map(Result::err);
    let said = refused.expect("past 16 MiB").to_string();
    assert!(
        said.contains("headers") && said.contains("more than 16 MiB of text"),
        "{said}"
    );
    assert_eq!(LIST_TEXT, 16 << 20);
}

#[test]
fn a_grant_budget_is_ten_thousand_values_and_one_mib() {
    let mut g = Budget::grant();
    for _ in 0..GRANT_VALUES {
        g.take(0).expect("within the bound");
    }
    assert!(g.take(0).is_err());
    let mut t = Budget::grant();
    assert!(t.take(GRANT_TEXT).is_ok());
    assert!(
        t.take(1)
            .expect_err("past 1 MiB")
            .to_string()
            .contains("grant_tools")
    );
}
