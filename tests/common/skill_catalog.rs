//! rmcp's own skills server (`SkillCatalog`, rmcp 3.11, feature `skills-fs`) as a peer for the
//! interop tests (issue 41, P5): a snapshot of a folder served in this process over an in-memory
//! duplex stream, framed as over stdio.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::{
    GetSkillRequestParams, GetSkillResult, ListResourcesResult, ListSkillsResult,
    PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

/// The handler: every skills method and `resources/*` answered by the catalog, as rmcp's own
/// documentation wires it.
#[derive(Clone)]
struct Catalog {
    skills: Arc<SkillCatalog>,
}

impl ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_skills_with_directory_read()
                .build(),
        )
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        Ok(self.skills.list_skills())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.skills.get_skill(&request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.skills.read_resource_directory(&request.uri)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.skills.resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.skills
            .read_resource(&request.uri)
            .map(Into::into)
            .ok_or_else(|| ErrorData::resource_not_found(request.uri, None))
    }
}

/// Loads a `SkillCatalog` of `dir` and serves it on a task of its own; returns the client's end
/// of the stream (for `McpSource::from_transport` or rmcp's own client). The server stops when
/// the client's end is dropped.
pub async fn serve_catalog(dir: &Path) -> tokio::io::DuplexStream {
    let dir: PathBuf = dir.to_owned();
    let skills = tokio::task::spawn_blocking(move || SkillCatalog::from_dir(dir))
        .await
        .expect("join")
        .expect("SkillCatalog::from_dir");
    let (client, server) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = Catalog {
            skills: Arc::new(skills),
        }
        .serve(server)
        .await
        .expect("serve the catalog");
        let _ = running.waiting().await;
    });
    client
}
