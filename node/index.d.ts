export * from './native';
export * from './errors';
