/** The overlap check on its own: repeats across strides and residues are found exactly. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_TEXTS, Refusal, Seen, SeenTexts, type Run } from "../src/guard.js";

function run(first: bigint, count: number, stride = 1n): Run {
  return { first, count, stride, last: first + BigInt(count - 1) * stride };
}

test("adjacent batches merge; a repeat of any ID is refused", () => {
  const seen = new Seen();
  seen.admit([run(1n, 100)]);
  seen.admit([run(101n, 100)]);
  seen.admit([run(1001n, 10)]);
  assert.throws(() => seen.admit([run(200n, 1)]), Refusal);
  assert.throws(() => seen.admit([run(990n, 12)]), /IDs 990\.\.=1001, which overlap IDs this client already received \(IDs 1001\.\.=1010\)/);
  seen.admit([run(201n, 799)]);
});

test("across strides: only a shared ID is a repeat (Chinese remainder theorem)", () => {
  const seen = new Seen();
  // Evens 0..=1000 (stride 2, residue 0).
  seen.admit([run(0n, 501, 2n)]);
  // Odds of the same span share nothing.
  seen.admit([run(1n, 500, 2n)]);
  // Stride 3 from 1001 up: 1001, 1004, ... beyond 1000, no overlap.
  seen.admit([run(1001n, 10, 3n)]);
  // Multiples of 4 meet the evens.
  assert.throws(() => seen.admit([run(2000n, 5, 4n), run(400n, 2, 4n)]), /IDs 400\.\.=404 step 4/);
  // The stride-3 run is 1001, 1004, ..., 1028: 1027 is not on it, 1025 is.
  seen.admit([run(1027n, 1)]);
  assert.throws(() => seen.admit([run(1025n, 1)]), /ID 1025, which overlap IDs this client already received \(IDs 1001\.\.=1028 step 3\)/);
  // Striped tags: residues mod 10 stay apart.
  const striped = new Seen();
  striped.admit([run(1n, 1000, 10n)]);
  striped.admit([run(2n, 1000, 10n)]);
  assert.throws(() => striped.admit([run(9991n, 2, 5n)]), Refusal);
});

test("within one answer, overlapping runs are refused", () => {
  assert.throws(() => new Seen().admit([run(10n, 5), run(12n, 1)]), /in one batch/);
  new Seen().admit([run(10n, 5), run(15n, 5)]);
});

test("text IDs: a repeat of any remembered one is refused, the oldest forgotten first", () => {
  const seen = new SeenTexts();
  seen.admit(["a", "b"]);
  seen.admit(["c", "d"]);
  assert.throws(() => seen.admit(["e", "a"]), /the text ID "a", which this client already received/);
  seen.admit(["e"]);
  assert.throws(() => seen.admit(["e"]), Refusal);
  for (let k = 0; k < MAX_TEXTS + 1000; k += 500) seen.admit(Array.from({ length: 500 }, (_, j) => `id-${k + j}`));
  assert.equal(seen.size, MAX_TEXTS);
  seen.admit(["a"]);
  assert.throws(() => seen.admit([`id-${MAX_TEXTS + 900}`]), Refusal);
});
