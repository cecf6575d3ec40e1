// test-needs: runtimes (Node 26)
import { fileURLToPath } from 'node:url'
import { hasTemporal } from '../../../../src/types/codec.js'
import { onNode26 } from '../../../support/newer-node.js'
import { temporalCodecTests } from './temporal-api-cases.js'

// The codecs of the temporal type option (see temporal-api-cases.ts):
// here on a runtime with the global Temporal, else on Node 26 in a child.

if (hasTemporal()) temporalCodecTests()
else onNode26(fileURLToPath(import.meta.url), 6)
