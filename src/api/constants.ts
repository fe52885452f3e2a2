/** Names of the ApiServerUpgrade API. Everything that builds a URL, a watch or a CRD reads them from here. */
export const GROUP = 'upgrade.apiserver.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'ApiServerUpgrade';
export const LIST_KIND = 'ApiServerUpgradeList';
export const PLURAL = 'apiserverupgrades';
export const SINGULAR = 'apiserverupgrade';
export const SHORT_NAMES: readonly string[] = ['asu'];
export const CATEGORIES: readonly string[] = ['upgrade'];
export const CRD_NAME = `${PLURAL}.${GROUP}`;

/** The Mixed Version Proxy's feature gate (KEP-4020). */
export const PROXY_GATE = 'UnknownVersionInteroperabilityProxy';
