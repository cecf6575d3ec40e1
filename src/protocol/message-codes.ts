// Message type bytes, named as in the PostgreSQL protocol documentation
// ("Message Formats"). Backend and frontend share some letters with different
// meanings, hence two namespaces.

export const Backend = {
  Authentication: 0x52, // R
  BackendKeyData: 0x4b, // K
  BindComplete: 0x32, // 2
  CloseComplete: 0x33, // 3
  CommandComplete: 0x43, // C
  CopyData: 0x64, // d
  CopyDone: 0x63, // c
  CopyInResponse: 0x47, // G
  CopyOutResponse: 0x48, // H
  CopyBothResponse: 0x57, // W
  DataRow: 0x44, // D
  EmptyQueryResponse: 0x49, // I
  ErrorResponse: 0x45, // E
  FunctionCallResponse: 0x56, // V
  NegotiateProtocolVersion: 0x76, // v
  NoData: 0x6e, // n
  NoticeResponse: 0x4e, // N
  NotificationResponse: 0x41, // A
  ParameterDescription: 0x74, // t
  ParameterStatus: 0x53, // S
  ParseComplete: 0x31, // 1
  PortalSuspended: 0x73, // s
  ReadyForQuery: 0x5a, // Z
  RowDescription: 0x54, // T
} as const

export const Frontend = {
  Bind: 0x42, // B
  Close: 0x43, // C
  CopyData: 0x64, // d
  CopyDone: 0x63, // c
  CopyFail: 0x66, // f
  Describe: 0x44, // D
  Execute: 0x45, // E
  Flush: 0x48, // H
  FunctionCall: 0x46, // F
  Parse: 0x50, // P
  Password: 0x70, // p (also SASLInitialResponse, SASLResponse, GSSResponse)
  Query: 0x51, // Q
  Sync: 0x53, // S
  Terminate: 0x58, // X
} as const

/** Authentication request codes carried in an Authentication ('R') message. */
export const Auth = {
  Ok: 0,
  KerberosV5: 2,
  CleartextPassword: 3,
  MD5Password: 5,
  GSS: 7,
  GSSContinue: 8,
  SSPI: 9,
  SASL: 10,
  SASLContinue: 11,
  SASLFinal: 12,
} as const

/** Protocol version numbers as sent in StartupMessage: major << 16 | minor. */
export const ProtocolVersion30 = 196608
export const ProtocolVersion32 = 196610
export const SSLRequestCode = 80877103
export const CancelRequestCode = 80877102
export const GSSENCRequestCode = 80877104

/** Human-readable name of a backend message type, for error messages. */
export function backendMessageName(type: number): string {
  for (const [name, code] of Object.entries(Backend)) if (code === type) return name
  const ch = type >= 0x20 && type < 0x7f ? `'${String.fromCharCode(type)}'` : `0x${type.toString(16).padStart(2, '0')}`
  return `unknown message type ${ch}`
}
