//! hydrofeed feeder: storage, format readers, split planning, coordinator and daemon.
