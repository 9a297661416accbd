/// Creates and parameterizes one instance per spec; shared by video and audio chains. The
/// stages of an isolation group (`@isolate(group=NAME)`) get one proxy and shells
/// (`Isolation.makeGroup`).
func makeInstances(_ specs: [FilterSpec], registry: PluginRegistry, kind: MediaKind) throws(ChainError) -> [FilterInstance] {
    let groups = try FilterSpec.checkIsolationGroups(specs)
    var instances: [FilterInstance] = []
    while instances.count < specs.count {
        let index = instances.count, spec = specs[index]
        if let group = groups.first(where: { $0.lowerBound == index }) {
            var types: [FilterType] = []
            for member in group {
                let type = try registry.filterType(specs[member].name)
                guard type.mediaKind == kind else {
                    throw .wrongMediaKind(filter: type.id, filterKind: type.mediaKind, chainKind: kind)
                }
                types.append(type)
            }
            let made = try Isolation.makeGroup(types, spec.isolation!, allowUntrusted: registry.allowsUntrustedPlugins)
            for (member, instance) in zip(group, made) { try setArguments(of: specs[member], on: instance) }
            instances += made
            continue
        }
        var type = try registry.filterType(spec.name)
        if let isolation = spec.isolation {
            type = try Isolation.proxyType(for: type, isolation, allowUntrusted: registry.allowsUntrustedPlugins)
        }
        guard type.mediaKind == kind else {
            throw .wrongMediaKind(filter: type.id, filterKind: type.mediaKind, chainKind: kind)
        }
        let instance = try type.makeInstance()
        try setArguments(of: spec, on: instance)
        instances.append(instance)
    }
    return instances
}

/// Sets a spec's arguments (by name or position) on its instance; every required one must be there.
private func setArguments(of spec: FilterSpec, on instance: FilterInstance) throws(ChainError) {
    let type = instance.type
    var position = 0
    for argument in spec.arguments {
        if let key = argument.key {
            try instance.set(key, text: argument.value)
        } else {
            guard position < type.parameters.count else {
                throw .tooManyValues(filter: type.id, count: spec.arguments.filter { $0.key == nil }.count,
                                     parameters: type.parameters.map(\.id))
            }
            try instance.set(type.parameters[position].id, text: argument.value)
            position += 1
        }
    }
    for p in type.parameters where p.isRequired && instance.values[p.id] == nil && p.defaultValue == nil {
        throw .missingParameter(filter: type.id, parameter: p.id)
    }
}
