//! An in-process MCP server double that lies on purpose and counts every request.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use serde_json::{Value, json};
use skillcache::source::{SkillSource, SourceFuture};
use skillcache::{Error, SkillEntry};

/// How `resources/read` misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadLie {
    Honest,
    /// The item carries another URI.
    WrongUri,
    /// Two different items for the URI.
    TwoContents,
    /// No item at all.
    NoContents,
    /// A blob that is not base64.
    BadBase64,
    /// Bytes as a base64 blob instead of text.
    AsBlob,
    /// An item with neither text nor blob.
    Neither,
}

#[derive(Default)]
struct State {
    /// skill URI → entry JSON (what skills/list and skills/get answer).
    entries: BTreeMap<String, Value>,
    /// file URI → bytes served by resources/read.
    files: BTreeMap<String, Vec<u8>>,
    hints: Value,
    read_lie: Option<ReadLie>,
    get_answers_for: Option<Value>,
}

/// The double.
#[derive(Default)]
pub struct Double {
    state: Mutex<State>,
    pub lists: AtomicUsize,
    pub gets: AtomicUsize,
    pub reads: AtomicUsize,
    pub read_log: Mutex<Vec<String>>,
}

impl Double {
    pub fn new() -> Double {
        let d = Double::default();
        d.state.lock().expect("lock").hints = json!({"ttlMs": 0, "cacheScope": "public"});
        d
    }

    /// Publishes a skill honestly: entry and bytes agree.
    pub fn publish(&self, entry: &SkillEntry, files: &super::Files) {
        let mut s = self.state.lock().expect("lock");
        s.entries
            .insert(entry.uri().as_str().to_owned(), entry.to_json());
        for (uri, bytes) in files {
            s.files.insert(uri.clone(), bytes.clone());
        }
    }

    /// Publishes an entry JSON as is (for dynamic or lying entries).
    pub fn publish_json(&self, uri: &str, entry: Value) {
        self.state
            .lock()
            .expect("lock")
            .entries
            .insert(uri.to_owned(), entry);
    }

    /// Serves different bytes for `uri` than the entry says (or new bytes for an unlisted file).
    pub fn serve_bytes(&self, uri: &str, bytes: &[u8]) {
        self.state
            .lock()
            .expect("lock")
            .files
            .insert(uri.to_owned(), bytes.to_vec());
    }

    /// Stops listing (and serving the entry of) the skill `uri`.
    pub fn withdraw(&self, uri: &str) {
        self.state.lock().expect("lock").entries.remove(uri);
    }

    pub fn set_hints(&self, hints: Value) {
        self.state.lock().expect("lock").hints = hints;
    }

    pub fn set_read_lie(&self, lie: ReadLie) {
        self.state.lock().expect("lock").read_lie = Some(lie);
    }

    /// `skills/get` answers with this entry whatever is asked.
    pub fn answer_get_with(&self, entry: Value) {
        self.state.lock().expect("lock").get_answers_for = Some(entry);
    }

    pub fn requests(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
            + self.gets.load(Ordering::SeqCst)
            + self.reads.load(Ordering::SeqCst)
    }

    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    fn with_hints(&self, mut v: Value) -> Value {
        let s = self.state.lock().expect("lock");
        if let (Value::Object(m), Value::Object(h)) = (&mut v, &s.hints) {
            for (k, val) in h {
                m.insert(k.clone(), val.clone());
            }
        }
        v
    }
}

fn not_found(method: &str, uri: &str) -> Error {
    Error::Source(skillcache::error::SourceError::Server {
        origin: None,
        uri: None,
        method: method.to_owned(),
        code: -32602,
        message: format!("nothing at {uri}"),
    })
}

impl SkillSource for Double {
    fn list_skills<'a>(&'a self, _cursor: Option<&'a str>) -> SourceFuture<'a> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let skills: Vec<Value> = self
            .state
            .lock()
            .expect("lock")
            .entries
            .values()
            .cloned()
            .collect();
        Box::pin(async move { Ok(self.with_hints(json!({"skills": skills}))) })
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        let s = self.state.lock().expect("lock");
        let entry = s
            .get_answers_for
            .clone()
            .or_else(|| s.entries.get(uri).cloned());
        drop(s);
        Box::pin(async move {
            let entry = entry.ok_or_else(|| not_found("skills/get", uri))?;
            Ok(self.with_hints(json!({"skill": entry})))
        })
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.read_log.lock().expect("lock").push(uri.to_owned());
        let s = self.state.lock().expect("lock");
        let bytes = s.files.get(uri).cloned();
        let lie = s.read_lie.unwrap_or(ReadLie::Honest);
        drop(s);
        Box::pin(async move {
            let bytes = bytes.ok_or_else(|| not_found("resources/read", uri))?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let contents = match lie {
                ReadLie::Honest => json!([{"uri": uri, "text": text}]),
                ReadLie::AsBlob => json!([{"uri": uri, "blob": b64}]),
                ReadLie::WrongUri => json!([{"uri": format!("{uri}-other"), "text": text}]),
                ReadLie::TwoContents => {
                    json!([{"uri": uri, "text": text}, {"uri": uri, "text": format!("{text}!")}])
                }
                ReadLie::NoContents => json!([]),
                ReadLie::BadBase64 => json!([{"uri": uri, "blob": "%%% not base64 %%%"}]),
                ReadLie::Neither => json!([{"uri": uri, "mimeType": "text/plain"}]),
            };
            Ok(json!({"contents": contents}))
        })
    }
}
