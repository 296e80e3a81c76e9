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
  if (deliveryFinished.hasSubscribers)
    deliveryFinished.publish({
      source: delivery.source,
      channel: delivery.channel,
      outcome: delivery.state,
    });
  return id;
}
