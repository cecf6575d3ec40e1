import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto'
import { readFileSync, existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { isIP } from 'node:net'
import { checkServerIdentity, createSecureContext, type ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import type { ConnectionConfig } from '../config/types.js'
import { ConfigError } from '../errors.js'

// libpq's sslmode semantics, mapped onto node:tls:
//   require    encrypt; verify nothing, unless a root certificate is available,
//              in which case the chain is verified as verify-ca does
//   verify-ca  verify the chain against sslrootcert, not the host name
//   verify-full verify the chain and that the certificate names the host
// Certificate files default to ~/.postgresql/{root.crt,postgresql.crt,postgresql.key}
// and are read at connect time, as libpq does.

function defaultFile(name: string): string | undefined {
  let home: string
  try {
    home = homedir()
  } catch {
    // Deno without --allow-sys: no home directory, so no default files (as libpq without HOME).
    return undefined
  }
  return home === '' ? undefined : join(home, '.postgresql', name)
}

function readSetting(setting: string, path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new ConfigError(setting, `could not read ${setting} file "${path}": ${(err as Error).message}`, { cause: err })
  }
}

export function tlsOptionsFor(config: ConnectionConfig, host: string, direct: boolean): TlsConnectionOptions {
  const opts: TlsConnectionOptions = {}
  const mode = config.sslmode
  const userTls = config.tls ?? {}

  let verifyChain = mode === 'verify-ca' || mode === 'verify-full'
  let verifyHost = mode === 'verify-full'
  const rootcert = config.sslrootcert
  if (rootcert === 'system') {
    // The system store, and always with full verification (libpq 16 rule).
    verifyChain = true
    verifyHost = true
  } else if (rootcert !== undefined) {
    opts.ca = readSetting('sslrootcert', rootcert)
    // libpq verifies the chain whenever a root certificate is available, in
    // every mode that encrypts.
    verifyChain = true
  } else if ('ca' in userTls) {
    verifyChain = true
  } else {
    const fallback = defaultFile('root.crt')
    if (fallback !== undefined && existsSync(fallback)) {
      opts.ca = readSetting('sslrootcert', fallback)
      verifyChain = true
    } else if (verifyChain) {
      throw new ConfigError(
        'sslrootcert',
        `sslmode=${mode} needs a root certificate to verify the server, but sslrootcert is not set and "${fallback ?? '~/.postgresql/root.crt'}" does not exist; ` +
          'set sslrootcert to a CA file, use sslrootcert=system for the system trust store, or choose a weaker sslmode',
      )
    }
  }

  const defaultCert = defaultFile('postgresql.crt')
  const certPath = config.sslcert ?? (defaultCert !== undefined && existsSync(defaultCert) ? defaultCert : undefined)
  if (certPath !== undefined) {
    opts.cert = readSetting('sslcert', certPath)
    const keyPath = config.sslkey ?? defaultFile('postgresql.key') ?? '~/.postgresql/postgresql.key'
    opts.key = readSetting('sslkey', keyPath)
    checkClientKey(opts.key, keyPath, opts.cert, certPath, config.sslpassword)
    if (config.sslpassword !== undefined) opts.passphrase = config.sslpassword
  } else if (config.sslkey !== undefined) {
    throw new ConfigError('sslkey', 'sslkey is set but sslcert is not; a client key needs its certificate')
  }
  if (config.sslcrl !== undefined) opts.crl = readSetting('sslcrl', config.sslcrl)

  opts.rejectUnauthorized = verifyChain
  if (verifyChain && !verifyHost) opts.checkServerIdentity = () => undefined
  // Always check the configured host name, never what node would fall back to:
  // without SNI (an IP literal, or sslsni=0) node checks `host`, which for a
  // direct connection is the hostaddr we dialled, not the name to verify.
  else if (verifyHost) opts.checkServerIdentity = (_name, cert) => checkServerIdentity(host, cert)
  const unix = host.startsWith('/') || host.startsWith('@')
  if (!unix && config.sslsni && isIP(host) === 0) opts.servername = host
  if (direct) opts.ALPNProtocols = ['postgresql']
  const all = { ...opts, ...userTls } as TlsConnectionOptions
  // A TLS socket keeps the options it was connected with, where inspect()
  // reaches them: the key and its passphrase go into a secure context instead.
  const { key, passphrase, pfx, ...rest } = all
  if ((key === undefined && passphrase === undefined && pfx === undefined) || all.secureContext !== undefined) return all
  return { ...rest, secureContext: createSecureContext(all) }
}

/**
 * Loads the client key the way node:tls will, so that a wrong or missing
 * sslpassword, an unreadable key or a key that does not belong to the
 * certificate is a ConfigError naming the setting to fix. Otherwise node:tls
 * throws a bare OpenSSL error ("bad decrypt") from tls.connect.
 */
function checkClientKey(keyPem: Buffer, keyPath: string, certPem: Buffer, certPath: string, passphrase: string | undefined): void {
  let key: KeyObject
  try {
    key = createPrivateKey(passphrase === undefined ? { key: keyPem } : { key: keyPem, passphrase })
  } catch (err) {
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/.test(keyPem.toString('latin1'))) {
      // Never echo the passphrase; OpenSSL's own message does not contain it either.
      throw new ConfigError(
        'sslpassword',
        passphrase === undefined
          ? `the sslkey file "${keyPath}" is encrypted, but no sslpassword was given`
          : `could not decrypt the sslkey file "${keyPath}": wrong sslpassword`,
        { cause: err },
      )
    }
    throw new ConfigError('sslkey', `could not load a private key from the sslkey file "${keyPath}": ${(err as Error).message}`, { cause: err })
  }
  let cert: X509Certificate
  try {
    cert = new X509Certificate(certPem)
  } catch (err) {
    throw new ConfigError('sslcert', `could not load a certificate from the sslcert file "${certPath}": ${(err as Error).message}`, { cause: err })
  }
  if (!cert.checkPrivateKey(key)) {
    throw new ConfigError('sslkey', `the private key in the sslkey file "${keyPath}" does not match the certificate in the sslcert file "${certPath}"`)
  }
}
