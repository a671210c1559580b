import CTracerDBus

/// Values into and out of messages, through `dbus_message_iter_*` (Swift cannot call the
/// variadic `dbus_message_append_args`).
package enum Marshal {
    static func append(_ value: DBusValue, to iterator: inout DBusMessageIter, call: String) throws {
        func fail(_ why: String) -> DBusError {
            DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: why, call: call)
        }
        func basic<T: BitwiseCopyable>(_ type: Int32, _ v: T) {
            var copy = v
            _ = dbus_message_iter_append_basic(&iterator, type, &copy)
        }
        func text(_ type: Int32, _ s: String) {
            s.withCString { p in
                var pointer: UnsafePointer<CChar>? = p
                _ = dbus_message_iter_append_basic(&iterator, type, &pointer)
            }
        }
        func container(_ type: Int32, _ signature: String?, _ body: (inout DBusMessageIter) throws -> Void) throws {
            var sub = DBusMessageIter()
            let opened =
                signature.map { sig in sig.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) } }
                ?? dbus_message_iter_open_container(&iterator, type, nil, &sub)
            guard opened != 0 else { throw fail("cannot open a container of type \(type)") }
            try body(&sub)
            _ = dbus_message_iter_close_container(&iterator, &sub)
        }
        switch value {
        case .byte(let v): basic(CTracerDBus_TYPE_BYTE, v)
        case .bool(let v): basic(CTracerDBus_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): basic(CTracerDBus_TYPE_INT16, v)
        case .uint16(let v): basic(CTracerDBus_TYPE_UINT16, v)
        case .int32(let v): basic(CTracerDBus_TYPE_INT32, v)
        case .uint32(let v): basic(CTracerDBus_TYPE_UINT32, v)
        case .int64(let v): basic(CTracerDBus_TYPE_INT64, v)
        case .uint64(let v): basic(CTracerDBus_TYPE_UINT64, v)
        case .double(let v): basic(CTracerDBus_TYPE_DOUBLE, v)
        case .string(let s):
            guard !s.utf8.contains(0) else { throw fail("a string contains NUL") }
            text(CTracerDBus_TYPE_STRING, s)
        case .objectPath(let s):
            guard dbus_validate_path(s, nil) != 0 else { throw fail("'\(s)' is not an object path") }
            text(CTracerDBus_TYPE_OBJECT_PATH, s)
        case .signature(let s):
            guard dbus_signature_validate(s, nil) != 0 else { throw fail("'\(s)' is not a signature") }
            text(CTracerDBus_TYPE_SIGNATURE, s)
        case .array(let element, let values):
            guard dbus_signature_validate_single(element, nil) != 0 else { throw fail("'\(element)' is not one type") }
            for v in values where v.signature != element {
                throw fail("an array of \(element) holds a \(v.signature)")
            }
            try container(CTracerDBus_TYPE_ARRAY, element) { sub in
                for v in values { try append(v, to: &sub, call: call) }
            }
        case .dictionary(let k, let v, let entries):
            try container(CTracerDBus_TYPE_ARRAY, "{" + k + v + "}") { sub in
                for e in entries {
                    guard e.key.signature == k, e.value.signature == v else {
                        throw fail("a dictionary of {\(k)\(v)} holds {\(e.key.signature)\(e.value.signature)}")
                    }
                    var entry = DBusMessageIter()
                    _ = dbus_message_iter_open_container(&sub, CTracerDBus_TYPE_DICT_ENTRY, nil, &entry)
                    try append(e.key, to: &entry, call: call)
                    try append(e.value, to: &entry, call: call)
                    _ = dbus_message_iter_close_container(&sub, &entry)
                }
            }
        case .variant(let inner):
            try container(CTracerDBus_TYPE_VARIANT, inner.signature) { sub in try append(inner, to: &sub, call: call) }
        case .structure(let fields):
            try container(CTracerDBus_TYPE_STRUCT, nil) { sub in
                for f in fields { try append(f, to: &sub, call: call) }
            }
        }
    }

    /// Every argument of a message.
    static func values(of message: OpaquePointer) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        return sequence(&iterator)
    }

    static func sequence(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var out: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != CTracerDBus_TYPE_INVALID {
            if let v = read(&iterator) { out.append(v) }
            if dbus_message_iter_next(&iterator) == 0 { break }
        }
        return out
    }

    static func read(_ iterator: inout DBusMessageIter) -> DBusValue? {
        func basic<T: BitwiseCopyable>(_ initial: T) -> T {
            var v = initial
            dbus_message_iter_get_basic(&iterator, &v)
            return v
        }
        func text() -> String {
            var p: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iterator, &p)
            return p.map { String(cString: $0) } ?? ""
        }
        switch dbus_message_iter_get_arg_type(&iterator) {
        case CTracerDBus_TYPE_BYTE: return .byte(basic(UInt8(0)))
        case CTracerDBus_TYPE_BOOLEAN: return .bool(basic(dbus_bool_t(0)) != 0)
        case CTracerDBus_TYPE_INT16: return .int16(basic(Int16(0)))
        case CTracerDBus_TYPE_UINT16: return .uint16(basic(UInt16(0)))
        case CTracerDBus_TYPE_INT32: return .int32(basic(Int32(0)))
        case CTracerDBus_TYPE_UINT32: return .uint32(basic(UInt32(0)))
        case CTracerDBus_TYPE_INT64: return .int64(basic(Int64(0)))
        case CTracerDBus_TYPE_UINT64: return .uint64(basic(UInt64(0)))
        case CTracerDBus_TYPE_DOUBLE: return .double(basic(Double(0)))
        case CTracerDBus_TYPE_STRING: return .string(text())
        case CTracerDBus_TYPE_OBJECT_PATH: return .objectPath(text())
        case CTracerDBus_TYPE_SIGNATURE: return .signature(text())
        case CTracerDBus_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return read(&sub).map { .variant($0) }
        case CTracerDBus_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .structure(sequence(&sub))
        case CTracerDBus_TYPE_ARRAY:
            let signature = currentSignature(&iterator)  // "aX" or "a{KV}"
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            if signature.hasPrefix("a{") {
                let inner = signature.dropFirst(2).dropLast()
                let key = String(inner.prefix(1))
                let value = String(inner.dropFirst())
                var entries: [DBusValue.DictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == CTracerDBus_TYPE_DICT_ENTRY {
                    var entry = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &entry)
                    let fields = sequence(&entry)
                    if fields.count == 2 { entries.append(.init(fields[0], fields[1])) }
                    if dbus_message_iter_next(&sub) == 0 { break }
                }
                return .dictionary(key: key, value: value, entries)
            }
            return .array(element: String(signature.dropFirst()), sequence(&sub))
        default:
            return nil
        }
    }

    static func currentSignature(_ iterator: inout DBusMessageIter) -> String {
        guard let p = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(p) }
        return String(cString: p)
    }
}
