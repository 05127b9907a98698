// The ESM entry: the CommonJS package's exports, by name.
import pkg from './index.js';

export const {
  SkillCache,
  LoadedSkill,
  SkillEntry,
  SkillFile,
  EntryInfo,
  Catalog,
  CatalogSkill,
  LockFile,
  SkillcacheError,
  UriError,
  EntryError,
  LimitExceededError,
  VerifyError,
  SourceError,
  ServerError,
  TransportError,
  TimeoutError,
  MessageTooLargeError,
  NotConnectedError,
  StoreError,
  IndexError,
  ConfigError,
  L2ConfigError,
  DeclinedError,
  OfflineError,
  AbortError,
  Aborter,
} = pkg;
export default pkg;
