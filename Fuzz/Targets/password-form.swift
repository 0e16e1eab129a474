// sources: Sources/Access/PasswordForm.swift
// A password hash as read from a users row of the index (a file anyone with root can edit):
// a form within its bounds that writes back as itself, or nothing; never a trap.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    if let form = PasswordForm(text) {
        precondition(form.memoryBytes <= PasswordForm.maxMemoryBytes && form.hash.count == 32)
        precondition(PasswordForm(form.text) == form, "\(form.text) does not read back")
    }
    return 0
}
