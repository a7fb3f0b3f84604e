//! Partial runs: pin data, run-step (one node from the trigger chain, from a
//! prior execution's run data, or from mock input) and resolved parameters.
