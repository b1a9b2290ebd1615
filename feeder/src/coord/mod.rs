//! The coordinator: plans splits, assigns them to feeders, keeps epochs, equal steps,
//! end-of-feed and resume state.
