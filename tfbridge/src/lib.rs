//! Batch frames in the ring (Arrow IPC messages behind a small header), Arrow to tensor layout,
//! and cluster spec / `TF_CONFIG`.
