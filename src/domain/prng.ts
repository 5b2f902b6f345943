/**
 * A small seeded pseudo-random generator of our own, for reproducible splits and bootstrap
 * resampling. Bit-compatibility with CPython's `random` is not a goal (architecture decision 10):
 * the same seed gives the same sequence on every platform and Node version, and that is all.
 *
 * Algorithm: xoshiro128** 1.1 (Blackman & Vigna, https://prng.di.unimi.it/xoshiro128starstar.c),
 * 128 bits of state, period 2^128 − 1. The state is seeded from a 32-bit seed by four successive
 * outputs of splitmix32 (state += 0x9e3779b9, then the finaliser
 * `x ^= x >>> 16; x *= 0x21f0aaad; x ^= x >>> 15; x *= 0x735a2d97; x ^= x >>> 15`). The finaliser
 * is a bijection and its four inputs differ, so at most one state word is zero and the all-zero
 * state (xoshiro's only forbidden one) cannot occur.
 *
 * - `nextUint32()`: uniform in [0, 2^32).
 * - `nextFloat()`: uniform in [0, 1) with 53 random bits (two draws).
 * - `int(n)`: uniform in [0, n) for 1 ≤ n ≤ 2^32, unbiased (rejection of the top remainder).
 * - `shuffle(xs)`: Fisher–Yates in place (from the end: swap `i` with `int(i + 1)`); returns `xs`.
 *
 * A generator is a mutable object: share one where a sequence of draws must be reproducible
 * (the split uses one generator across all categories, in sorted order).
 */

export interface Prng {
  nextUint32(): number
  nextFloat(): number
  int(n: number): number
  shuffle<T>(xs: Array<T>): Array<T>
}

export const MAX_SEED = 0xffff_ffff

const TWO_32 = 0x1_0000_0000

/** A seed is an integer in [0, 2^32). */
export const isValidSeed = (seed: number): boolean => Number.isInteger(seed) && seed >= 0 && seed <= MAX_SEED

const rotl = (x: number, k: number): number => (x << k) | (x >>> (32 - k))

/** splitmix32: returns the next state and the output for it. */
const splitmix32 = (state: number): readonly [number, number] => {
  const next = (state + 0x9e37_79b9) | 0
  let z = next
  z = Math.imul(z ^ (z >>> 16), 0x21f0_aaad)
  z = Math.imul(z ^ (z >>> 15), 0x735a_2d97)
  z = z ^ (z >>> 15)
  return [next, z >>> 0]
}

/** The generator seeded from a 32-bit seed (via splitmix32). */
export const makePrng = (seed: number): Prng => {
  if (!isValidSeed(seed)) throw new RangeError(`PRNG seed must be an integer in [0, ${MAX_SEED}], got ${seed}`)
  const state: Array<number> = []
  let sm = seed | 0
  for (let i = 0; i < 4; i++) {
    const [next, out] = splitmix32(sm)
    sm = next
    state.push(out)
  }
  return fromState(state)
}

/**
 * The generator started from an explicit xoshiro128** state (four 32-bit words, not all zero).
 * For checking against the reference implementation's vectors; use `makePrng` otherwise.
 */
export const fromState = (state: ReadonlyArray<number>): Prng => {
  const s = Uint32Array.from(state)
  if (s.length !== 4 || s.every((w) => w === 0)) throw new RangeError("xoshiro128** needs four state words, not all zero")

  const nextUint32 = (): number => {
    const s0 = s[0]!, s1 = s[1]!, s2 = s[2]!, s3 = s[3]!
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0
    const t = s1 << 9
    const n2 = s2 ^ s0
    const n3 = s3 ^ s1
    s[1] = s1 ^ n2
    s[0] = s0 ^ n3
    s[2] = n2 ^ t
    s[3] = rotl(n3, 11)
    return result
  }

  const nextFloat = (): number => {
    const hi = nextUint32() >>> 5 // 27 bits
    const lo = nextUint32() >>> 6 // 26 bits
    return (hi * 67_108_864 + lo) / 9_007_199_254_740_992 // (hi·2^26 + lo) / 2^53
  }

  const int = (n: number): number => {
    if (!Number.isInteger(n) || n < 1 || n > TWO_32) throw new RangeError(`int(n) needs an integer 1 ≤ n ≤ 2^32, got ${n}`)
    // accept x < limit, the largest multiple of n not above 2^32, so every residue is equally likely
    const limit = TWO_32 - (TWO_32 % n)
    for (;;) {
      const x = nextUint32()
      if (x < limit) return x % n
    }
  }

  const shuffle = <T>(xs: Array<T>): Array<T> => {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = int(i + 1)
      const tmp = xs[i] as T
      xs[i] = xs[j] as T
      xs[j] = tmp
    }
    return xs
  }

  return { nextUint32, nextFloat, int, shuffle }
}
