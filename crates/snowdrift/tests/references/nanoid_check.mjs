// nanoid itself (ai/nanoid 5), made to draw its random bytes from a file, so snowdrift's
// tests can give both the same bytes and compare the IDs.
//   node nanoid_check.mjs BYTES_FILE ALPHABET|default SIZE COUNT
// prints COUNT IDs, one per line: nanoid(SIZE) for "default", customAlphabet(...)() else.
import { readFileSync } from 'node:fs'
import { webcrypto } from 'node:crypto'

const [file, alphabet, size, count] = process.argv.slice(2)
const stream = readFileSync(file)
let at = 0
// nanoid fills its pool through webcrypto.getRandomValues; hand it the file's bytes in order.
webcrypto.getRandomValues = (buf) => {
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)
  if (at + bytes.length > stream.length) throw new Error('the byte file ran out')
  bytes.set(stream.subarray(at, at + bytes.length))
  at += bytes.length
  return buf
}
const { nanoid, customAlphabet } = await import('nanoid')
const make = alphabet === 'default' ? () => nanoid(Number(size)) : customAlphabet(alphabet, Number(size))
const out = []
for (let i = 0; i < Number(count); i++) out.push(make())
process.stdout.write(out.join('\n') + '\n')
