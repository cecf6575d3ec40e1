import { fileURLToPath } from 'node:url'
import { hasTemporal } from '../../src/types/codec.js'
import { onNode26 } from '../helpers/newer-node.js'
import { temporalCodecTests } from './types-temporal-api-cases.js'

// The codecs of the temporal type option (see types-temporal-api-cases.ts):
// here on a runtime with the global Temporal, else on Node 26 in a child.

if (hasTemporal()) temporalCodecTests()
else onNode26(fileURLToPath(import.meta.url), 6)
