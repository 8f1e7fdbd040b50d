// paralleldrive/cuid2 itself, with its random draws, time, counter and fingerprint given,
// so snowdrift's tests can compare its cuid2s with the reference's.
//   node cuid2_check.mjs < {"draws": [u32...], "time_ms": N, "counter": N,
//                           "fingerprint": "...", "length": N, "count": N,
//                           "globals": "a,b" (optional: also print createFingerprint's)}
//   prints the fingerprint line first when "globals" is given, then COUNT cuid2s; and for
//   every line of "check" whether isCuid accepts it.
import { readFileSync } from 'node:fs'
// The package's entry exports only init, createId, isCuid and getConstants; its source
// module (which the entry re-exports) has createCounter and createFingerprint too.
const { init, createCounter, createFingerprint, isCuid } = await import(
  new URL('./node_modules/@paralleldrive/cuid2/src/index.js', import.meta.url)
)

const spec = JSON.parse(readFileSync(0, 'utf8'))
let i = 0
const random = () => spec.draws[i++ % spec.draws.length] / 0x100000000
const out = []
if (spec.globals !== undefined) {
  const globalObj = Object.fromEntries(spec.globals.split(',').map((k) => [k, 1]))
  out.push(createFingerprint({ globalObj, random }))
  i = 0
}
Date.now = () => spec.time_ms
const make = init({
  random,
  counter: createCounter(spec.counter),
  length: spec.length,
  fingerprint: spec.fingerprint,
})
for (let n = 0; n < spec.count; n++) out.push(make())
for (const id of spec.check ?? []) out.push(`${id} ${isCuid(id) ? 'ok' : 'refused'}`)
process.stdout.write(out.join('\n') + '\n')
