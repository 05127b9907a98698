// What `connectClient` needs of the host's client: a connected `Client` of
// @modelcontextprotocol/client is one.
export interface RequestClient {
  request(
    request: { method: string; params?: Record<string, unknown> },
    resultSchema: { readonly '~standard': { readonly version: 1; readonly vendor: string; readonly validate: (value: unknown) => { readonly value: unknown } } },
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<unknown>;
}
