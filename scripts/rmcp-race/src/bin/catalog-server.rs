//! rmcp's own skills server: a `SkillCatalog` of one folder over stdio, or over Streamable HTTP
//! with `--http ADDR` (issue 41), wired as rmcp's documentation shows: rmcp's
//! `StreamableHttpService` with its default configuration and a local session manager, served
//! by hyper on `/mcp` (every path, here).
//!
//! ```text
//! catalog-server DIR [--http ADDR]
//! ```

use std::sync::Arc;

use rmcp::handler::server::skill_catalog::SkillCatalog;
use rmcp::model::{
    GetSkillRequestParams, GetSkillResult, ListResourcesResult, ListSkillsResult,
    PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().cloned() else {
        eprintln!("usage: catalog-server DIR [--http ADDR]");
        std::process::exit(2);
    };
    let skills = tokio::task::spawn_blocking(move || SkillCatalog::from_dir(dir))
        .await
        .expect("join")
        .expect("load the catalog");
    let catalog = Catalog {
        skills: Arc::new(skills),
    };
    if let (Some("--http"), Some(addr)) = (args.get(1).map(String::as_str), args.get(2)) {
        return http(catalog, addr).await;
    }
    let server = catalog
        .serve(rmcp::transport::stdio())
        .await
        .expect("serve");
    let _ = server.waiting().await;
}

/// Serves `catalog` over Streamable HTTP on `addr` until the process is ended.
async fn http(catalog: Catalog, addr: &str) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    let service = StreamableHttpService::new(
        move || Ok(catalog.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let service = service.clone();
        tokio::spawn(async move {
            let answer = hyper::service::service_fn(move |request| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), answer)
                .await;
        });
    }
}
