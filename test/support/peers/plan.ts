// What `npm run test:peers` runs (scripts/test-peers.ts): for each
// integration, the packages whose releases it swaps, where their ranges come
// from, and the test files that exercise them. test/unit/project/peers.test.ts
// checks that every peer dependency in package.json is here.

/** A package installed beside the swapped ones because the tests load it and it depends on them. */
export interface Companion {
  name: string
  /**
   * Which release: the newest whose own peer dependency accepts the swapped
   * release (the OpenTelemetry SDK, one line per API line), or the newest of the
   * same major.minor (Prisma's packages, released together).
   */
  pick: 'accepts-peer' | 'same-minor'
}

export interface PeerGroup {
  /** The integration, for the table. */
  label: string
  /** The packages swapped together, each over its own range; the first is the one the group is named by. */
  packages: string[]
  /** Where their ranges are: pipegres's peer dependencies, or its dev dependencies for packages the tests use beside pipegres/pg. */
  rangesFrom: 'peerDependencies' | 'devDependencies'
  companions: Companion[]
  /** Test runner filters (scripts/run-tests.ts): the files that load these packages. */
  tests: string[]
}

export const PEER_GROUPS: PeerGroup[] = [
  {
    label: 'pglite',
    packages: ['@electric-sql/pglite'],
    rangesFrom: 'peerDependencies',
    companions: [],
    tests: ['test/integration/integrations/pglite/'],
  },
  {
    label: 'kysely',
    packages: ['kysely'],
    rangesFrom: 'peerDependencies',
    companions: [],
    // pipegres/kysely, Kysely's own PostgresDialect over pipegres/pg, and a dialect for postgres.js over pipegres/postgres.
    tests: ['test/integration/integrations/kysely/', 'test/integration/integrations/pg/kysely-dialect', 'test/integration/integrations/postgres/kysely-postgres-js'],
  },
  {
    label: 'drizzle',
    packages: ['drizzle-orm'],
    rangesFrom: 'peerDependencies',
    companions: [],
    // pipegres/drizzle, and drizzle's postgres-js driver over pipegres/postgres.
    tests: ['test/integration/integrations/drizzle/', 'test/integration/integrations/postgres/drizzle-postgres-js'],
  },
  {
    label: 'prisma',
    packages: ['@prisma/driver-adapter-utils'],
    rangesFrom: 'peerDependencies',
    // The tests generate and run a Prisma Client; a user's CLI and client come in the same release as the adapter utilities.
    companions: [
      { name: '@prisma/client', pick: 'same-minor' },
      { name: 'prisma', pick: 'same-minor' },
    ],
    tests: ['test/integration/integrations/prisma/'],
  },
  {
    label: 'otel',
    packages: ['@opentelemetry/api'],
    rangesFrom: 'peerDependencies',
    companions: [
      { name: '@opentelemetry/sdk-trace', pick: 'accepts-peer' },
      { name: '@opentelemetry/context-async-hooks', pick: 'accepts-peer' },
    ],
    tests: ['test/integration/integrations/otel/'],
  },
  {
    label: 'pg streams',
    // Not peers: pg's own packages, which pipegres/pg runs unchanged.
    packages: ['pg-cursor', 'pg-query-stream', 'pg-copy-streams'],
    rangesFrom: 'devDependencies',
    companions: [],
    tests: ['test/integration/integrations/pg/pg-streams'],
  },
]
