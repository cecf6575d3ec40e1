// Test certificates made with the openssl CLI, so TLS tests need no committed
// keys and no crypto code of our own. EC P-256 keys keep generation to a few
// tens of milliseconds.

import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

export interface TestCertificates {
  caFile: string
  caKeyFile: string
  /** A CA that signed nothing the server presents: verification against it must fail. */
  otherCaFile: string
  /** CN=localhost, subjectAltName DNS:localhost only, so verify-full against 127.0.0.1 fails. */
  serverCertFile: string
  serverKeyFile: string
  clientCertFile: string
  clientKeyFile: string
  /** The client key again, encrypted with clientKeyPassphrase. */
  clientKeyEncryptedFile: string
  clientKeyPassphrase: string
}

// Our own config files keep the result independent of the system's openssl.cnf.
const REQ_CONFIG = `[req]
distinguished_name = dn
x509_extensions = ca_ext
[dn]
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
`

const leafExtensions = (usage: 'serverAuth' | 'clientAuth', san: string | undefined): string => `[leaf_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = ${usage}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
${san ? `subjectAltName = ${san}\n` : ''}`

async function openssl(cwd: string, args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { cwd })
  } catch (err) {
    const e = err as Error & { stderr?: string; code?: string }
    const hint = e.code === 'ENOENT' ? ' (is the openssl CLI installed?)' : ''
    throw new Error(`openssl ${args[0]} failed${hint}: ${e.stderr?.trim() || e.message}`, { cause: err })
  }
}

const genKey = (cwd: string, file: string) =>
  openssl(cwd, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-pkeyopt', 'ec_param_enc:named_curve', '-out', file])

const selfSigned = (cwd: string, key: string, cn: string, out: string) =>
  openssl(cwd, ['req', '-new', '-x509', '-config', 'req.cnf', '-key', key, '-sha256', '-days', '3650', '-subj', `/CN=${cn}`, '-out', out])

const csr = (cwd: string, key: string, cn: string, out: string) =>
  openssl(cwd, ['req', '-new', '-config', 'req.cnf', '-key', key, '-subj', `/CN=${cn}`, '-out', out])

// Certificates from one issuer need distinct serials, and a random one spares us openssl's serial file.
function randomSerial(): string {
  const bytes = randomBytes(8)
  bytes[0] = bytes[0]! & 0x7f
  return `0x${bytes.toString('hex')}`
}

const sign = (cwd: string, csrFile: string, extFile: string, out: string) =>
  openssl(cwd, [
    'x509', '-req', '-in', csrFile, '-CA', 'ca.crt', '-CAkey', 'ca.key',
    '-set_serial', randomSerial(),
    '-days', '3650', '-sha256', '-extfile', extFile, '-extensions', 'leaf_ext', '-out', out,
  ])

/** Creates a CA, a server and a client certificate signed by it, and an unrelated CA, in `dir`. */
export async function createCertificates(dir: string, clientUser: string): Promise<TestCertificates> {
  const passphrase = 'pipegres test passphrase'
  await Promise.all([
    writeFile(join(dir, 'req.cnf'), REQ_CONFIG),
    writeFile(join(dir, 'server.ext'), leafExtensions('serverAuth', 'DNS:localhost')),
    writeFile(join(dir, 'client.ext'), leafExtensions('clientAuth', undefined)),
  ])
  await Promise.all(['ca.key', 'other-ca.key', 'server.key', 'client.key'].map((f) => genKey(dir, f)))
  await Promise.all([
    selfSigned(dir, 'ca.key', 'pipegres test CA', 'ca.crt'),
    selfSigned(dir, 'other-ca.key', 'pipegres unrelated CA', 'other-ca.crt'),
    csr(dir, 'server.key', 'localhost', 'server.csr'),
    csr(dir, 'client.key', clientUser, 'client.csr'),
    openssl(dir, ['pkey', '-in', 'client.key', '-aes256', '-passout', `pass:${passphrase}`, '-out', 'client-encrypted.key']),
  ])
  await Promise.all([
    sign(dir, 'server.csr', 'server.ext', 'server.crt'),
    sign(dir, 'client.csr', 'client.ext', 'client.crt'),
  ])
  // PostgreSQL refuses a key others can read; clients like libpq warn about it too.
  await Promise.all(['ca.key', 'other-ca.key', 'server.key', 'client.key', 'client-encrypted.key'].map((f) => chmod(join(dir, f), 0o600)))
  return {
    caFile: join(dir, 'ca.crt'),
    caKeyFile: join(dir, 'ca.key'),
    otherCaFile: join(dir, 'other-ca.crt'),
    serverCertFile: join(dir, 'server.crt'),
    serverKeyFile: join(dir, 'server.key'),
    clientCertFile: join(dir, 'client.crt'),
    clientKeyFile: join(dir, 'client.key'),
    clientKeyEncryptedFile: join(dir, 'client-encrypted.key'),
    clientKeyPassphrase: passphrase,
  }
}
