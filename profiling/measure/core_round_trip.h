// How far apart two of this machine's cores are, in time: a cache line passed from one
// thread to another and back, the median round trip. Every parallel op pays it when its
// threads start and join, and for every line one core wrote and another then reads: the
// CPU backend's ops hand their outputs from core to core all through a decode step.
// Two cores sharing a last-level cache pass a line in tens of nanoseconds; cores on
// different dies or sockets take several times as long. A virtual machine's vCPUs can
// move between the two as the hypervisor places them, within minutes, and a small parallel
// op gains far less from its threads while they are far apart (docs/prediction.md, "Near
// and far cores").
#pragma once

#include <string>

namespace decodelab {

// Round trips shorter than this are cores that share a cache (40-100 ns on common desktops
// and servers); longer ones cross a die or socket.
constexpr double kNearCoreRoundTripNs = 250.0;

// Two threads (this one and a helper) pass a flag back and forth: the median over batches
// of round trips, in nanoseconds. About 10 ms on near cores; gives up after kBudget of
// waiting (a single core, a helper that never gets a CPU) and returns 0 where it could not
// measure.
double measure_core_round_trip_ns();

// "59 ns": a round trip in whole nanoseconds.
std::string format_round_trip(double ns);
// "near" or "far": a round trip against the line between cores that share a cache and not.
const char* core_distance(double round_trip_ns, double near_limit_ns = kNearCoreRoundTripNs);

}  // namespace decodelab
