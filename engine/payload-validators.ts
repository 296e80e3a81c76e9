/**
 * The compiled validators of the wake and agent payload schemas, shared by
 * the built-in triggers and the mapped route (compiled once, at load).
 */
import {
  type AgentPayload,
  agentPayloadSchema,
  type WakePayload,
  wakePayloadSchema,
} from '../schemas/payloads.ts';
import { compileValidator } from './validation.ts';

export const validateWake = compileValidator<WakePayload>(wakePayloadSchema);
export const validateAgent = compileValidator<AgentPayload>(agentPayloadSchema);
