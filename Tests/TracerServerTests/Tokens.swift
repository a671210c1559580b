import TracerModel
@_spi(Blocking) import TracerStore

@testable import TracerServer

/// A store's tokens, each call as the command line makes it (`TokenStore` takes the store's
/// handle): for tests that make tokens before they serve.
struct Tokens {
    let store: DocumentStore

    func create(role: Role, deviceID: String?, anchor: String? = nil, name: String?) throws -> TokenStore.Created {
        try store.write { try TokenStore.create(role: role, deviceID: deviceID, anchor: anchor, name: name, in: $0) }
    }

    func createLink(deviceID: String, name: String?) throws -> TokenStore.Link {
        try store.write { try TokenStore.createLink(deviceID: deviceID, name: name, in: $0) }
    }

    func revoke(_ id: String) throws -> Bool { try store.write { try TokenStore.revoke(id, in: $0) } }
}
