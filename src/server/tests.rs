//! The server's answers, in-process.

use super::*;

/// A folder with one skill `esc` holding `files` besides its SKILL.md.
fn folder(files: &[(&str, &[u8])]) -> crate::scratch::Scratch {
    let dir = crate::scratch::scratch();
    let skill = dir.path().join("esc");
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: esc\ndescription: Escapes.\n---\n",
    )
    .expect("write");
    for (name, bytes) in files {
        let path = skill.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }
    dir
}

/// `n` skills `s000`, `s001`, … in one folder.
fn many(n: usize) -> crate::scratch::Scratch {
    let dir = crate::scratch::scratch();
    for i in 0..n {
        let name = format!("s{i:03}");
        let skill = dir.path().join(&name);
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Skill {i}.\n---\n"),
        )
        .expect("write");
    }
    dir
}

#[test]
fn b2_serve_sends_text_heavy_in_escapes_as_a_blob() {
    let dir = folder(&[
        ("plain.txt", b"plain words\n"),
        ("controls.txt", "\u{1}\u{2}\u{3}".repeat(100).as_bytes()),
    ]);
    let server = SkillServer::new(dir.path());
    let read = |name: &str| {
        server
            .call(
                "resources/read",
                &json!({"uri": format!("skill://esc/{name}")}),
            )
            .expect("read")["contents"][0]
            .clone()
    };
    assert_eq!(read("plain.txt")["text"], "plain words\n");
    let controls = read("controls.txt");
    assert!(controls.get("text").is_none(), "{controls}");
    assert!(controls["blob"].as_str().is_some_and(|b| b.len() == 400));
    assert_eq!(wire::json_len("a\"\u{1}"), 2 + 1 + 2 + 6);
    assert_eq!(wire::base64_len(4), 8 + 2);
}

#[test]
fn serve_lists_each_skill_md_as_markdown_named_by_its_frontmatter() {
    let dir = folder(&[]);
    let listed = SkillServer::new(dir.path())
        .call("resources/list", &json!({}))
        .expect("resources/list");
    assert_eq!(
        listed["resources"],
        json!([{"uri": "skill://esc/SKILL.md", "name": "esc", "description": "Escapes.",
                "mimeType": "text/markdown", "size": 40}])
    );
    assert!(listed.get("nextCursor").is_none());
}

#[test]
fn serve_unknown_skill_is_invalid_params_and_get_carries_hints_but_no_cursor() {
    let dir = folder(&[]);
    let server = SkillServer::new(dir.path()).ttl_ms(5_000);
    let err = server
        .call("skills/get", &json!({"uri": "skill://nope/SKILL.md"}))
        .expect_err("unknown skill");
    assert_eq!(err.0, INVALID_PARAMS, "{err:?}");
    assert!(!err.1.contains("nope"), "the message quotes no input: {err:?}");
    let got = server
        .call("skills/get", &json!({"uri": "skill://esc/SKILL.md"}))
        .expect("known skill");
    assert_eq!(
        (got["ttlMs"].clone(), got["cacheScope"].clone()),
        (json!(5_000), json!("public"))
    );
    assert!(got.get("nextCursor").is_none(), "{got}");
}

#[test]
fn serve_directory_read_lists_direct_children_and_refuses_a_file() {
    let dir = folder(&[("references/a.md", b"a"), ("references/deep/b.md", b"b")]);
    let server = SkillServer::new(dir.path());
    let off = server
        .call("resources/directory/read", &json!({"uri": "skill://esc"}))
        .expect_err("off unless enabled");
    assert_eq!(off.0, METHOD_NOT_FOUND);
    let server = server.directory_read(true);
    let top = server
        .call("resources/directory/read", &json!({"uri": "skill://esc"}))
        .expect("the skill root is a directory");
    let names: Vec<(&str, &str)> = top["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name"),
                r["mimeType"].as_str().expect("mime"),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("SKILL.md", "text/markdown"),
            ("references", "inode/directory")
        ]
    );
    let sub = server
        .call(
            "resources/directory/read",
            &json!({"uri": "skill://esc/references"}),
        )
        .expect("a subfolder is a directory");
    assert_eq!(sub["resources"].as_array().map(Vec::len), Some(2));
    let file = server
        .call(
            "resources/directory/read",
            &json!({"uri": "skill://esc/SKILL.md"}),
        )
        .expect_err("a file is not a directory");
    assert_eq!(file.0, INVALID_PARAMS);
}

#[test]
fn serve_an_edited_file_is_served_as_it_now_is() {
    let dir = folder(&[("notes.md", b"v1")]);
    let server = SkillServer::new(dir.path());
    let digest = |s: &SkillServer| {
        s.call("skills/get", &json!({"uri": "skill://esc/SKILL.md"}))
            .expect("get")["skill"]["resources"]
            .clone()
    };
    let before = digest(&server);
    std::fs::write(dir.path().join("esc/notes.md"), b"version two").expect("edit");
    assert_ne!(digest(&server), before, "skills/get re-checks its skill's folder");
    let changes = server.changes().expect("changes");
    assert!(changes.uris.contains("skill://esc/notes.md"), "{changes:?}");
}

#[test]
fn e1_a_file_edited_since_the_scan_is_an_error_answer_then_the_skill_is_published_anew() {
    let dir = folder(&[("notes.md", b"first")]);
    let server = SkillServer::new(dir.path()).watch_interval(std::time::Duration::from_secs(3600));
    let uri = json!({"uri": "skill://esc/notes.md"});
    assert_eq!(
        server.call("resources/read", &uri).expect("read")["contents"][0]["text"],
        "first"
    );
    // Same length, other bytes: only the digest can tell.
    std::fs::write(dir.path().join("esc/notes.md"), b"FIRST").expect("edit");
    let err = server.call("resources/read", &uri).expect_err("changed");
    assert_eq!(err.0, INTERNAL_ERROR, "{err:?}");
    // The error rescanned the skill: the new bytes are now the published ones.
    let get = server
        .call("skills/get", &json!({"uri": "skill://esc/SKILL.md"}))
        .expect("get");
    let listed = get["skill"]["resources"].to_string();
    assert!(
        listed.contains(&crate::digest::Digest::of(b"FIRST").to_string()),
        "{listed}"
    );
    assert_eq!(
        server.call("resources/read", &uri).expect("read")["contents"][0]["text"],
        "FIRST"
    );
}

#[test]
fn e8_skills_list_pages_by_size_and_count_and_a_page_cursor_continues_it() {
    let dir = many(250);
    let server = SkillServer::new(dir.path());
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let page = server.call("skills/list", &params).expect("a page");
        pages += 1;
        let skills = page["skills"].as_array().expect("skills");
        assert!(skills.len() <= wire::SKILLS_PAGE.entries);
        assert!(page.to_string().len() < 1 << 20, "a page stays under 1 MiB");
        seen.extend(skills.iter().map(|s| s["uri"].as_str().expect("uri").to_owned()));
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 250);
    let mut sorted = seen.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 250, "no skill twice");
}

#[test]
fn e8_a_cursor_this_server_did_not_give_out_is_invalid_params() {
    let dir = many(3);
    let server = SkillServer::new(dir.path());
    for bad in [json!("nonsense!"), json!(42), json!(wire::cursor("").replace('A', "B")), json!("a".repeat(10_000))] {
        let err = server
            .call("skills/list", &json!({"cursor": bad}))
            .expect_err("a bad cursor");
        assert_eq!(err.0, INVALID_PARAMS, "{bad}: {err:?}");
        assert!(!err.1.contains("nonsense"), "{err:?}");
    }
    let after_first = wire::cursor("s000");
    let rest = server
        .call("skills/list", &json!({"cursor": after_first}))
        .expect("a cursor of ours");
    assert_eq!(rest["skills"].as_array().map(Vec::len), Some(2));
}

#[test]
fn e8_strict_by_default_and_lenient_publishes_what_the_agent_skills_rules_refuse() {
    let dir = crate::scratch::scratch();
    for (name, extra) in [
        ("tools", "allowed-tools: [Read, Grep]"),
        ("meta", "metadata:\n  version: 2"),
        ("plain", "allowed-tools: Read Grep\nmetadata:\n  version: \"2\""),
    ] {
        let skill = dir.path().join(name);
        std::fs::create_dir_all(&skill).expect("mkdir");
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill.\n{extra}\n---\n"),
        )
        .expect("write");
    }
    let names = |server: SkillServer| -> Vec<String> {
        server.call("skills/list", &json!({})).expect("list")["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .map(|s| s["uri"].as_str().expect("uri").to_owned())
            .collect()
    };
    assert_eq!(names(SkillServer::new(dir.path())), ["skill://plain/SKILL.md"]);
    assert_eq!(
        names(SkillServer::new(dir.path()).lenient(true)),
        ["skill://meta/SKILL.md", "skill://plain/SKILL.md", "skill://tools/SKILL.md"]
    );
}

/// R-E3 (found in review): a directory read of a URI made of megabytes of `/a` segments costs
/// its length, not its length squared (every ancestor was hashed and looked up): answered
/// (refused: no such skill) well inside the deadline the test runs under.
#[test]
fn e3_a_directory_read_of_a_huge_uri_costs_its_length_not_its_square() {
    let dir = folder(&[("refs/a.md", b"a")]);
    let server = SkillServer::new(dir.path()).directory_read(true);
    let uri = format!("skill://esc/refs{}", "/a".repeat(2 << 20));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let answer = server.call("resources/directory/read", &json!({"uri": uri}));
        let _ = tx.send(answer.map(|v| v.to_string()));
    });
    // Before the fix this took hours; the deadline only keeps a regression from hanging CI.
    let answer = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("answered within the deadline");
    // Refused, or an empty listing: no published file lies under that path.
    assert!(answer.is_err() || answer.as_ref().is_ok_and(|a| !a.contains("a.md")), "{answer:?}");
}

/// A server as `serve_stdio`/`serve_http` run it: its watcher's flag set before the first scan
/// (the tests call `changes()` for the watcher's tick).
fn watched(dir: &std::path::Path) -> SkillServer {
    let server = SkillServer::new(dir);
    server.shared.watch();
    server
}

fn read_text(server: &SkillServer, uri: &str) -> Result<String, RpcError> {
    server
        .call("resources/read", &json!({"uri": uri}))
        .map(|r| r["contents"][0]["text"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn p3_a_watched_server_answers_the_bytes_its_scan_hashed_until_the_next_scan_publishes_an_edit() {
    let dir = folder(&[("notes.md", b"published\n")]);
    let server = watched(dir.path());
    assert_eq!(read_text(&server, "skill://esc/notes.md").as_deref(), Ok("published\n"));
    assert!(server.shared.held.used() > 0, "the scan kept what it hashed");
    // Edited on disk: until the watcher's next scan the published bytes are answered, never
    // the edit (nor an error): they are what the listing's digest names.
    std::fs::write(dir.path().join("esc/notes.md"), b"edited, not published\n").expect("edit");
    assert_eq!(read_text(&server, "skill://esc/notes.md").as_deref(), Ok("published\n"));
    let changes = server.changes().expect("scan");
    assert!(changes.uris.contains("skill://esc/notes.md"), "{changes:?}");
    assert_eq!(
        read_text(&server, "skill://esc/notes.md").as_deref(),
        Ok("edited, not published\n"),
        "the scan published the edit, and answers it"
    );
}

/// Round 26 of review: `serve_stdio`/`serve_http` scanned first and set the watcher's flag
/// after, so nothing was held until a skill changed.
#[cfg(feature = "serve")]
#[test]
fn p3_the_first_scan_of_a_served_folder_keeps_what_it_hashed() {
    let dir = folder(&[("notes.md", b"published\n")]);
    let server = SkillServer::new(dir.path());
    rmcp_server::start(&server).expect("start");
    assert!(server.shared.held.used() > 0, "held from the first scan");
    std::fs::write(dir.path().join("esc/notes.md"), b"edited, not published\n").expect("edit");
    assert_eq!(read_text(&server, "skill://esc/notes.md").as_deref(), Ok("published\n"));
}

/// Round 26 of review: the served folder removed, a watched server answered its held bytes
/// on and on. Nothing is published once the folder cannot be scanned, and nothing is held.
#[test]
fn p3_a_served_folder_removed_publishes_nothing_and_holds_nothing() {
    let dir = folder(&[("notes.md", b"published\n")]);
    let folder_path = dir.path().join("served");
    std::fs::rename(dir.path().join("esc"), {
        std::fs::create_dir(&folder_path).expect("mkdir");
        folder_path.join("esc")
    })
    .expect("move");
    let server = watched(&folder_path);
    assert!(read_text(&server, "skill://esc/notes.md").is_ok());
    std::fs::remove_dir_all(&folder_path).expect("rm");
    assert!(server.changes().is_err(), "the folder cannot be scanned");
    assert_eq!(server.shared.held.used(), 0);
    let (code, _) = read_text(&server, "skill://esc/notes.md").expect_err("not published");
    assert_eq!(code, INVALID_PARAMS);
}

/// Round 26 of review: a dynamic skill whose path needs encoding was published as static.
#[test]
fn a_dynamic_skill_whose_path_needs_encoding_is_published_dynamic() {
    let dir = crate::scratch::scratch();
    let skill = dir.path().join("my group").join("esc");
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(skill.join("SKILL.md"), "---\nname: esc\ndescription: Escapes.\n---\n")
        .expect("write");
    for spelled in ["my group/esc", "my group/esc/", "./my group//esc", "my group/./esc"] {
        let server = watched(dir.path()).dynamic(spelled);
        let got = server
            .call("skills/get", &json!({"uri": "skill://my%20group/esc/SKILL.md"}))
            .expect("get");
        assert_eq!(got["skill"]["resources"], "dynamic", "{spelled}: {got}");
    }
}

#[test]
fn p3_an_unwatched_server_holds_nothing_and_reads_each_file_from_the_folder() {
    let dir = folder(&[("notes.md", b"published\n")]);
    let server = SkillServer::new(dir.path()).watch_interval(std::time::Duration::from_secs(3600));
    assert_eq!(read_text(&server, "skill://esc/notes.md").as_deref(), Ok("published\n"));
    assert_eq!(server.shared.held.used(), 0);
    std::fs::write(dir.path().join("esc/notes.md"), b"edited, not published\n").expect("edit");
    let (code, _) = read_text(&server, "skill://esc/notes.md").expect_err("changed since");
    assert_eq!(code, INTERNAL_ERROR);
}

#[test]
fn p3_held_bytes_stay_within_the_bound_and_the_rest_is_read_checked_from_the_folder() {
    let dir = folder(&[("a.md", &[b'a'; 600]), ("b.md", &[b'b'; 600])]);
    // Room for SKILL.md and one of the two files.
    let server = watched(dir.path()).held_bytes(1_000);
    assert_eq!(read_text(&server, "skill://esc/a.md").map(|t| t.len()), Ok(600));
    let used = server.shared.held.used();
    assert!((600..=1_000).contains(&used), "{used}");
    // Whichever was not held is read from the folder and checked: an edit is an error there.
    std::fs::write(dir.path().join("esc/a.md"), [b'x'; 600]).expect("edit");
    std::fs::write(dir.path().join("esc/b.md"), [b'y'; 600]).expect("edit");
    let answers = [read_text(&server, "skill://esc/a.md"), read_text(&server, "skill://esc/b.md")];
    assert_eq!(
        answers.iter().filter(|a| a.is_err()).count(),
        1,
        "one held (answered as published), one read and refused: {answers:?}"
    );
    assert!(answers.iter().flatten().all(|t| t == &"a".repeat(600) || t == &"b".repeat(600)));
}

#[test]
fn p3_the_room_held_bytes_took_is_given_back_when_their_skill_is_gone() {
    let dir = folder(&[("notes.md", b"published\n")]);
    let server = watched(dir.path());
    assert!(read_text(&server, "skill://esc/notes.md").is_ok());
    assert!(server.shared.held.used() > 0);
    std::fs::remove_dir_all(dir.path().join("esc")).expect("rm");
    server.changes().expect("scan");
    assert_eq!(server.shared.held.used(), 0, "nothing held for a skill no longer published");
}

#[test]
fn p3_a_dynamic_skills_files_are_answered_as_they_now_are_never_from_held_bytes() {
    let dir = folder(&[("notes.md", b"first\n")]);
    let server = watched(dir.path()).dynamic("esc");
    assert_eq!(read_text(&server, "skill://esc/notes.md").as_deref(), Ok("first\n"));
    std::fs::write(dir.path().join("esc/notes.md"), b"now\n").expect("edit");
    assert_eq!(read_text(&server, "skill://esc/notes.md").as_deref(), Ok("now\n"));
}
