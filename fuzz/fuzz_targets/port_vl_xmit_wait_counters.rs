//! `ibmad::PortVlXmitWaitCounters`: parse never panics; emit(parse(x)) reproduces x.
#![no_main]

mad_fuzz::repr_target!(ibmad::PortVlXmitWaitCounters);
