//! One-node producer: reads an input with the format readers and feeds one or more trainers
//! through rings.
