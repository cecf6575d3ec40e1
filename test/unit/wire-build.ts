// The wire tests' message builders are the shared backend-message builders.
export { commandComplete, concat, dataRow, errorResponse, int32, int64, message, result, rowDescription, type FieldSpec } from '../helpers/backend-messages.js'
