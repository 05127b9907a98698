export * from './native';
export * from './skillfile';
export * from './errors';
export * from './client';
