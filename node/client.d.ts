// What `connectClient` needs of the host's client: a connected `Client` of
// @modelcontextprotocol/client (2.x) or of @modelcontextprotocol/sdk (1.x) is one. The package
// passes its own result schema, which both SDKs accept (a Standard Schema for 2.x, `safeParse` for
// 1.x); its type is the SDK's to say, so it is `never` here.
export interface RequestClient {
  request(
    request: { method: string; params?: Record<string, unknown> },
    resultSchema: never,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<unknown>;
}
