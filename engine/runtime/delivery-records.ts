/**
 * A delivery's final outcome, recorded in the store and published once for
 * the metrics, whichever store holds it and whoever delivered (an agent
 * run's reply or a heartbeat's).
 */
import { deliveryFinished } from '../observe/events.ts';
import type { DeliveryRecord, SessionStore } from './runtime-store.ts';

/** Record the outcome; returns the record's id. */
export async function recordDelivery(
  store: Pick<SessionStore, 'recordDelivery'>,
  delivery: DeliveryRecord,
): Promise<string> {
  const id = await store.recordDelivery(delivery);
  deliveryRecorded(delivery);
  return id;
}

/** Publish a delivery's outcome once it is in the store (recorded alone or with its run's end). */
export function deliveryRecorded(delivery: DeliveryRecord): void {
  if (deliveryFinished.hasSubscribers)
    deliveryFinished.publish({
      source: delivery.source,
      channel: delivery.channel,
      outcome: delivery.state,
    });
}
