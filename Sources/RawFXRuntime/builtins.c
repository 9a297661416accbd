/* The list of built-in plugins (rawfx_builtins.h): a lock-free stack of static
 * records, pushed by constructors and read by PluginRegistry. */
#define _GNU_SOURCE
#include "rawfx_builtins.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>

static _Atomic(const rawfx_builtin_plugin *) builtin_head;

void rawfx_register_builtin_plugin(rawfx_builtin_plugin *plugin)
{
    const rawfx_builtin_plugin *head = atomic_load_explicit(&builtin_head, memory_order_acquire);
    for (const rawfx_builtin_plugin *known = head; known != NULL; known = known->next)
        if (known == plugin)
            return;
    do {
        plugin->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&builtin_head, &head, plugin, memory_order_acq_rel,
                                                    memory_order_acquire));
}

const rawfx_builtin_plugin *rawfx_builtin_plugins(void)
{
    return atomic_load_explicit(&builtin_head, memory_order_acquire);
}

const char *rawfx_builtin_plugin_library_path(const rawfx_builtin_plugin *plugin)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (dladdr1((const void *)plugin->get_entry, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL)
        return NULL;
    return map->l_name != NULL && map->l_name[0] != '\0' ? map->l_name : NULL;
}
