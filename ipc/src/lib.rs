//! Zero-copy shared-memory frame ring between a feeder and a trainer process.
#![cfg_attr(not(test), warn(missing_docs))]
