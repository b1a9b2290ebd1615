//! The split order of a data epoch and the seeds derived from the job seed (epoch, shuffle
//! buffer), all from one mixing function so that the order is part of the resume contract.

/// splitmix64: the one mixing function behind every derived seed and the split order. Ours,
/// not a library's, because the order is part of the resume contract and must not change
/// with a dependency update.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed of an epoch, from the job seed.
pub fn epoch_seed(seed: u64, epoch: u32) -> u64 {
    mix64(seed ^ mix64(u64::from(epoch) ^ 0x6879_6472_6f66_6565))
}

/// Seed of a rank's shuffle buffer in an epoch.
pub fn shuffle_seed(seed: u64, epoch: u32, rank: u32) -> u64 {
    mix64(epoch_seed(seed, epoch) ^ mix64(u64::from(rank) ^ 0x7368_7566_666c_6500))
}

/// The split order of a data epoch: a Fisher-Yates permutation of `0..n` driven by
/// splitmix64 from the epoch seed. Depends on (seed, epoch, n) only, not on the number of
/// workers, so a resumed run with another worker count walks the same order.
pub fn split_order(seed: u64, epoch: u32, n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    let mut state = epoch_seed(seed, epoch);
    for i in (1..v.len()).rev() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let r = mix64(state);
        // Multiply-shift: unbiased enough for n < 2^32 and stable across platforms.
        let j = ((u128::from(r) * (i as u128 + 1)) >> 64) as usize;
        v.swap(i, j);
    }
    v
}
