// For the DOM build of pipegres/wire only (tsconfig.wire-dom.json): engine
// APIs that browsers may or may not have, declared optional so that code
// reaching them must check first.

interface ErrorConstructor {
  /** V8's (Chrome, Edge, Node); absent from some engines. */
  captureStackTrace?(targetObject: object, constructorOpt?: Function): void
}
