"""Models of the papers and of RFC 9002: pure functions of protocol parameters (no measurement). `ack_overhead`
(ACK sizes and overheads), `ackfreq22_equations` (ackfreq22 Eq. 1-5), `recovery` (RFC 9002's RTT estimator and PTO)."""
