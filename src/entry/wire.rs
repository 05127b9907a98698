//! `skills/list` and `skills/get` results, and safe paging (R-W9).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::error::EntryError;
use super::{CacheHints, SkillEntry, Validation};
use crate::rule::Rule;
use crate::uri::{FileUri, SkillUri};

/// The most pages one listing may take; a server that keeps inventing cursors is cut off.
pub const MAX_PAGES: usize = 10_000;

/// One validated page of `skills/list`. Each skill is validated on its own: one bad entry does
/// not refuse its neighbours.
#[derive(Debug)]
#[non_exhaustive]
pub struct ListPage {
    /// Each entry, or why it was refused.
    pub skills: Vec<Result<SkillEntry, EntryError>>,
    /// The cursor for the next page, if any.
    pub next_cursor: Option<String>,
    /// The page's cache hints.
    pub hints: CacheHints,
}

fn object<'a>(
    method: &'static str,
    result: &'a Value,
) -> Result<&'a serde_json::Map<String, Value>, EntryError> {
    result.as_object().ok_or(EntryError::Response {
        origin: None,
        method,
        rule: Rule::WrongType {
            expected: "an object",
        },
    })
}

/// Parses one `skills/list` result.
///
/// # Errors
/// [`EntryError::Response`] when the result itself is malformed (not each bad entry).
pub fn parse_list_result(result: &Value, validation: &Validation) -> Result<ListPage, EntryError> {
    const METHOD: &str = "skills/list";
    let obj = object(METHOD, result)?;
    let skills = match obj.get("skills") {
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(EntryError::Response {
                origin: None,
                method: METHOD,
                rule: Rule::WrongType {
                    expected: "skills: an array",
                },
            });
        }
        None => {
            return Err(EntryError::Response {
                origin: None,
                method: METHOD,
                rule: Rule::Missing,
            });
        }
    };
    let next_cursor = match obj.get("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(EntryError::Response {
                origin: None,
                method: METHOD,
                rule: Rule::WrongType {
                    expected: "nextCursor: a string",
                },
            });
        }
    };
    let hints = CacheHints::from_result(METHOD, obj)?;
    let skills = skills
        .iter()
        .map(|s| SkillEntry::from_json(s, validation))
        .collect();
    Ok(ListPage {
        skills,
        next_cursor,
        hints,
    })
}

/// Parses a `skills/get` result and checks it answers the skill that was asked for.
///
/// # Errors
/// [`EntryError::Response`] for a malformed result or an answer about another skill;
/// the entry's own validation errors otherwise.
pub fn parse_get_result(
    result: &Value,
    requested: &SkillUri,
    validation: &Validation,
) -> Result<(SkillEntry, CacheHints), EntryError> {
    const METHOD: &str = "skills/get";
    let obj = object(METHOD, result)?;
    let skill = obj.get("skill").ok_or(EntryError::Response {
        origin: None,
        method: METHOD,
        rule: Rule::Missing,
    })?;
    // Which skill the answer is about is checked before anything else, so an answer about B is
    // reported as such even when B's entry is also invalid.
    if let Some(returned) = skill.get("uri").and_then(Value::as_str)
        && FileUri::parse(returned).map_or(true, |u| &u != requested.file())
    {
        return Err(EntryError::Response {
            origin: None,
            method: METHOD,
            rule: Rule::WrongSkill {
                requested: requested.as_str().to_owned(),
                returned: returned.to_owned(),
            },
        });
    }
    let hints = CacheHints::from_result(METHOD, obj)?;
    Ok((SkillEntry::from_json(skill, validation)?, hints))
}

/// Accumulates the pages of one listing: stops on a repeated cursor, refuses every copy of a
/// repeated skill URI (R-W9), and bounds the number of pages.
///
/// ```
/// use skillcache::entry::{Listing, Validation, parse_list_result};
/// let mut listing = Listing::new();
/// let page = parse_list_result(&serde_json::json!({"skills": [], "nextCursor": "c1"}), &Validation::default()).unwrap();
/// assert_eq!(listing.add_page(page).unwrap(), Some("c1".to_owned()));
/// let page = parse_list_result(&serde_json::json!({"skills": [], "nextCursor": "c1"}), &Validation::default()).unwrap();
/// assert!(listing.add_page(page).is_err()); // the same cursor again: no endless loop
/// ```
#[derive(Debug, Default)]
pub struct Listing {
    cursors: HashSet<String>,
    pages: usize,
    skills: Vec<Result<SkillEntry, EntryError>>,
    /// Canonical URI → indices into `skills`.
    by_uri: HashMap<String, Vec<usize>>,
    hints: Option<CacheHints>,
}

impl Listing {
    /// An empty listing.
    #[must_use]
    pub fn new() -> Listing {
        Listing::default()
    }

    /// Adds a page; returns the cursor to ask for next, or `None` when the listing is complete.
    ///
    /// # Errors
    /// [`EntryError::Response`] on a repeated cursor or more than [`MAX_PAGES`] pages.
    pub fn add_page(&mut self, page: ListPage) -> Result<Option<String>, EntryError> {
        const METHOD: &str = "skills/list";
        self.pages += 1;
        if self.pages > MAX_PAGES {
            return Err(EntryError::Response {
                origin: None,
                method: METHOD,
                rule: Rule::Value {
                    allowed: "at most 10000 pages",
                },
            });
        }
        // The hints of a listing are the most conservative of its pages'.
        self.hints = Some(match self.hints {
            None => page.hints,
            Some(h) => CacheHints::new(
                h.ttl_ms().min(page.hints.ttl_ms()),
                if h.scope() == page.hints.scope() {
                    h.scope()
                } else {
                    super::Scope::Private
                },
            ),
        });
        for skill in page.skills {
            let key = match &skill {
                Ok(e) => Some(e.uri().canonical().to_owned()),
                Err(EntryError::Invalid { skill: Some(u), .. }) => {
                    Some(FileUri::parse(u).map_or_else(|_| u.clone(), |f| f.canonical().to_owned()))
                }
                Err(EntryError::LimitExceeded { skill: u, .. }) => {
                    Some(u.file().canonical().to_owned())
                }
                Err(_) => None,
            };
            if let Some(key) = key {
                self.by_uri.entry(key).or_default().push(self.skills.len());
            }
            self.skills.push(skill);
        }
        match page.next_cursor {
            Some(c) if !self.cursors.insert(c.clone()) => Err(EntryError::Response {
                origin: None,
                method: METHOD,
                rule: Rule::RepeatedCursor { cursor: c },
            }),
            next => Ok(next),
        }
    }

    /// The listing's entries in server order; every copy of a repeated URI is refused.
    #[must_use]
    pub fn finish(mut self) -> (Vec<Result<SkillEntry, EntryError>>, CacheHints) {
        for indices in self.by_uri.values().filter(|v| v.len() > 1) {
            for &i in indices {
                let uri = match &self.skills[i] {
                    Ok(e) => e.uri().as_str().to_owned(),
                    Err(EntryError::Invalid { skill: Some(u), .. }) => u.clone(),
                    Err(EntryError::LimitExceeded { skill: u, .. }) => u.as_str().to_owned(),
                    Err(_) => String::new(),
                };
                self.skills[i] = Err(EntryError::Invalid {
                    origin: None,
                    skill: Some(uri.clone()),
                    field: "uri".into(),
                    rule: Rule::RepeatedSkill { uri },
                });
            }
        }
        (self.skills, self.hints.unwrap_or_default())
    }
}

/// Refuses a result whose `resultType` is anything but `complete` (for example
/// `input_required`). A result without the field predates it and is complete by definition.
///
/// ```
/// # use serde_json::json;
/// use skillcache::entry::check_result_type;
/// assert!(check_result_type("resources/read", &json!({"resultType": "complete"})).is_ok());
/// assert!(check_result_type("resources/read", &json!({})).is_ok());
/// assert!(check_result_type("resources/read", &json!({"resultType": "input_required"})).is_err());
/// ```
///
/// # Errors
/// [`EntryError::Response`] with [`Rule::ResultType`] (or [`Rule::WrongType`] for a
/// `resultType` that is not a string).
pub fn check_result_type(method: &'static str, result: &Value) -> Result<(), EntryError> {
    match result.get("resultType") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s == "complete" => Ok(()),
        Some(Value::String(s)) => Err(EntryError::Response {
            origin: None,
            method,
            rule: Rule::ResultType { actual: s.clone() },
        }),
        Some(_) => Err(EntryError::Response {
            origin: None,
            method,
            rule: Rule::WrongType {
                expected: "resultType: a string",
            },
        }),
    }
}
