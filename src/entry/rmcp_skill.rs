//! rmcp's own skill values (issue 41, P6): a Rust host that already listed a server with rmcp
//! (`Peer::list_all_skills`) hands the `Skill` values it holds to skillcache instead of listing
//! again. Nothing of rmcp's checking is trusted: each value is written back to the JSON it came
//! from and validated by [`SkillEntry::from_json`], under the caller's [`Validation`], so an entry
//! made here is exactly what the same JSON off the wire would have made.

use super::error::EntryError;
use super::{SkillEntry, Validation};
use crate::rule::Rule;

impl SkillEntry {
    /// Validates a skill entry rmcp holds (`rmcp::model::Skill`, from `list_all_skills`,
    /// `list_skills` or `get_skill`) by skillcache's rules, from its JSON form: rmcp's own
    /// `Skill::validate` passing is no evidence here (the two sets of rules differ: see
    /// docs/interop.md).
    ///
    /// ```
    /// use rmcp::model::{Skill, SkillFrontmatter, SkillResource, SkillResources};
    /// use skillcache::{SkillEntry, entry::Validation};
    /// let md = b"---\nname: demo\ndescription: A demo.\n---\n";
    /// let listed = Skill::new(
    ///     "skill://demo/SKILL.md",
    ///     SkillFrontmatter::new("demo", "A demo."),
    ///     SkillResources::Files(vec![SkillResource::from_bytes("skill://demo/SKILL.md", md)]),
    /// );
    /// let entry = SkillEntry::from_rmcp(&listed, &Validation::default()).unwrap();
    /// assert_eq!(entry.name(), "demo");
    ///
    /// // rmcp accepts a description over 1,024 characters; skillcache does not.
    /// let long = Skill::new(
    ///     "skill://demo/SKILL.md",
    ///     SkillFrontmatter::new("demo", "x".repeat(1025)),
    ///     SkillResources::Files(vec![SkillResource::from_bytes("skill://demo/SKILL.md", md)]),
    /// );
    /// assert!(long.validate().is_ok());
    /// assert!(SkillEntry::from_rmcp(&long, &Validation::default()).is_err());
    /// ```
    ///
    /// # Errors
    /// What [`SkillEntry::from_json`] returns for the same JSON.
    pub fn from_rmcp(
        skill: &rmcp::model::Skill,
        validation: &Validation,
    ) -> Result<SkillEntry, EntryError> {
        // rmcp's `Skill` serializes to a JSON object of string keys, which cannot fail; should a
        // later version's value not, it is refused like any entry that is not an object.
        let json = serde_json::to_value(skill).map_err(|_| EntryError::Invalid {
            origin: None,
            skill: Some(skill.uri.clone()),
            field: String::new(),
            rule: Rule::WrongType { expected: "object" },
        })?;
        SkillEntry::from_json(&json, validation)
    }
}
