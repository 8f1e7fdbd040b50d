//! Counter mode: Redis `INCRBY` counters, including ones that reset each day, month or year.
