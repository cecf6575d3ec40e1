// pipegres/cloudflare: the Cloudflare Workers transport by name, for the
// `stream` option. pipegres uses it by itself when it runs in workerd; this is
// for code that wants to say so (or to wrap it). It loads cloudflare:sockets on
// first use, so importing it elsewhere costs nothing until a connection is made.

export { cloudflareStream } from '../connection/cloudflare-socket.js'
