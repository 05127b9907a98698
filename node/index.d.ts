/// <reference lib="esnext.disposable" />
export * from './native';
export * from './reports';
export * from './skillfile';
export * from './errors';
export * from './client';

declare module './native' {
  interface SkillCache {
    /**
     * What `await using cache = new SkillCache(…)` calls when its scope ends, failed or not:
     * waits for the store, as `flush()` does, so that what the scope loaded is on disk before
     * whatever follows (a temporary root removed).
     */
    [Symbol.asyncDispose](): Promise<void>
  }
}
