"""Backend of the chatagent browser extension: native-messaging framing
(`protocol`), message models (`messages`), the `BridgeTab` backend (`tab`,
`requests`), the host loop (`host`) and host registration (`install`).
See PROTOCOL.md."""
