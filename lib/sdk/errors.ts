/**
 * The SDK's error type alone: a light entry for callers that only report errors (the CLI's
 * start-up reads it without loading the Client and everything below it).
 */
export { LayerFsError, isLayerFsError, type ErrorCode } from '../errors.js';
