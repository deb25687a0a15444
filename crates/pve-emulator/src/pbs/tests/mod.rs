//! End-to-end tests of the PBS emulator over real HTTPS with reqwest.
