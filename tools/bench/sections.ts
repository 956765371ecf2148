/**
 * The default benchmark sections, in run order. Add new sections here (e.g. a simulator-speed section
 * that times the simulator against the real queue in the same run and reports a ratio).
 */
import { budgetOverheadSection } from './budget-overhead.ts';
import { catalogueSpeedSection } from './catalogue-speed.ts';
import { claimLatencySection } from './claim-latency.ts';
import { cycleThroughputSection } from './cycle-throughput.ts';
import { durabilitySection } from './durability.ts';
import { fleetSection } from './fleet.ts';
import { gateSpeedSection } from './gate-speed.ts';
import { pgClaimLatencySection } from './pg-claim-latency.ts';
import { pgCycleSection } from './pg-cycle.ts';
import type { BenchSection } from './registry.ts';
import { simSpeedSection } from './sim-speed.ts';

export const defaultSections: readonly BenchSection[] = [cycleThroughputSection, claimLatencySection, budgetOverheadSection, simSpeedSection, catalogueSpeedSection, gateSpeedSection, durabilitySection, pgCycleSection, pgClaimLatencySection, fleetSection];
