/**
 * Test helpers for stores: the conformance suite every backend passes. Needs vitest.
 */
export { type DescribeStoreOptions, describeStore, type StoreFactory } from './conformance.js';
