export * from './native';
export * from './reports';
export * from './skillfile';
export * from './errors';
export * from './client';
