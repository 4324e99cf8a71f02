//! NumPy's legacy global generator (`np.random.seed` / `np.random.permutation`), reproduced
//! bit for bit: mlx_lm's `iterate_batches` draws the order of its batches from it, so the same
//! seed must give the same order here as in Python.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// `numpy.random.RandomState` restricted to what mlx_lm's batching draws: seeding with an
/// integer and `permutation(n)`.
#[derive(Clone, Debug)]
pub struct RandomState {
    mt: Box<[u32; N]>,
    pos: usize,
}

impl RandomState {
    /// `np.random.seed(seed)`: NumPy seeds an integer through MT19937's `init_genrand`, not
    /// `init_by_array`.
    pub fn new(seed: u32) -> Self {
        let mut mt = Box::new([0u32; N]);
        mt[0] = seed;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Self { mt, pos: N }
    }

    fn generate(&mut self) {
        let mt = &mut self.mt;
        for i in 0..N {
            let y = (mt[i] & UPPER_MASK) | (mt[(i + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            mt[i] = mt[(i + M) % N] ^ (y >> 1) ^ mag;
        }
        self.pos = 0;
    }

    /// One tempered 32-bit output of MT19937.
    pub fn next_u32(&mut self) -> u32 {
        if self.pos == N {
            self.generate();
        }
        let mut y = self.mt[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// NumPy's `random_interval`: a uniform value in `0..=max` by masked rejection. Values of
    /// `max` above `u32::MAX` draw 64-bit words from two 32-bit outputs (high word first), as
    /// NumPy's legacy generator does.
    fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mut mask = max;
        mask |= mask >> 1;
        mask |= mask >> 2;
        mask |= mask >> 4;
        mask |= mask >> 8;
        mask |= mask >> 16;
        mask |= mask >> 32;
        loop {
            let value = if max <= u64::from(u32::MAX) {
                u64::from(self.next_u32()) & mask
            } else {
                let high = u64::from(self.next_u32());
                let low = u64::from(self.next_u32());
                ((high << 32) | low) & mask
            };
            if value <= max {
                return value;
            }
        }
    }

    /// `np.random.permutation(n)`: `arange(n)` shuffled by NumPy's Fisher–Yates, which walks
    /// from the end and swaps each place with one drawn from `0..=i`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut values: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.interval(i as u64) as usize;
            values.swap(i, j);
        }
        values
    }
}
