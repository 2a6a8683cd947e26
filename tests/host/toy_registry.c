/* tests/host/toy_registry.c — a hand-written stand-in for the SDK's generated
 * registry, so the host can be tested against providers whose behaviour the
 * tests know (toy_extension.c). Laid out as the generator lays it out: static
 * declaration tables handed to gufo_registry_load() in a fixed order. */
#include <gufo/ext/status.h>
#include <gufo/ext/version.h>
#include <gufo/host/registry.h>

#include <gufo_registry_populate.h>

#include "toy_extension.h"

#define TOY_SOURCE_DIR GUFO_HOST_TOY_SOURCE_DIR
#define TOY_REQUIREMENT ">= " GUFO_EXT_API_VERSION_STRING

static const char *const toy_keys[] = {"gguf:gufo-host-toy"};
static const char *const toy_speculative[] = {"toy-draft"};
static const char *const toy_styles[] = {"plain", "loud"};
static const char *const toy_failures[] = {"none", "create", "get_info", "detokenize"};

static const gufo_provider_decl toy_providers[] = {
    {.struct_size = sizeof(gufo_provider_decl), .id = "toy-picky", .capability = GUFO_CAPABILITY_TEXT_GENERATION,
     .keys = toy_keys, .n_keys = 1, .target = "toy_backbone", .entry = toy_picky_provider},
    {.struct_size = sizeof(gufo_provider_decl), .id = "toy-gpu", .capability = GUFO_CAPABILITY_TEXT_GENERATION,
     .keys = toy_keys, .n_keys = 1, .target = "toy_cuda", .entry = NULL,
     .unavailable_reason = "target toy_cuda was not built: no CUDA compiler found",
     .speculative = (const char *const[]){"toy-gpu-only"}, .n_speculative = 1},
    {.struct_size = sizeof(gufo_provider_decl), .id = "toy-text", .capability = GUFO_CAPABILITY_TEXT_GENERATION,
     .keys = toy_keys, .n_keys = 1, .target = "toy_backbone", .entry = toy_text_provider,
     .speculative = toy_speculative, .n_speculative = 1},
    {.struct_size = sizeof(gufo_provider_decl), .id = "toy-decide", .capability = GUFO_CAPABILITY_DECISIONS,
     .keys = toy_keys, .n_keys = 1, .target = "toy_backbone", .entry = toy_decide_provider},
    {.struct_size = sizeof(gufo_provider_decl), .id = "toy-embed", .capability = GUFO_CAPABILITY_EMBEDDINGS,
     .keys = toy_keys, .n_keys = 1, .target = "toy_backbone", .entry = toy_embed_provider},
    {.struct_size = sizeof(gufo_provider_decl), .id = "toy-image", .capability = GUFO_CAPABILITY_IMAGE_GENERATION,
     .keys = toy_keys, .n_keys = 1, .target = "toy_backbone", .entry = toy_image_provider},
};

static const gufo_option_decl toy_options[] = {
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-step", .type = GUFO_OPTION_INT,
     .commands = GUFO_COMMAND_PROMPT | GUFO_COMMAND_SERVE, .help = "Letters to skip per token", .default_value = "1"},
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-upper", .type = GUFO_OPTION_BOOL,
     .commands = GUFO_COMMAND_PROMPT, .help = "Print letters in upper case", .default_value = "false"},
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-scale", .type = GUFO_OPTION_FLOAT,
     .commands = GUFO_COMMAND_PROMPT, .help = "Logit scale", .default_value = "1.0"},
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-style", .type = GUFO_OPTION_STRING,
     .commands = GUFO_COMMAND_PROMPT, .help = "Output style", .default_value = "plain",
     .allowed_values = toy_styles, .n_allowed_values = 2},
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-step-ms", .type = GUFO_OPTION_INT,
     .commands = GUFO_COMMAND_PROMPT | GUFO_COMMAND_CHAT, .help = "Milliseconds each decode step takes",
     .default_value = "0"},
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-vocab", .type = GUFO_OPTION_PATH,
     .commands = GUFO_COMMAND_PROMPT, .help = "A vocabulary file", .default_value = NULL},
    {.struct_size = sizeof(gufo_option_decl), .name = "toy-fail", .type = GUFO_OPTION_STRING,
     .commands = GUFO_COMMAND_PROMPT | GUFO_COMMAND_SERVE, .help = "Interface slot that fails, with its reason",
     .default_value = "none", .allowed_values = toy_failures, .n_allowed_values = 4},
};

static const gufo_provider_decl broken_providers[] = {
    {.struct_size = sizeof(gufo_provider_decl), .id = "broken-text", .capability = GUFO_CAPABILITY_TEXT_GENERATION,
     .keys = (const char *const[]){"gguf:gufo-host-broken"}, .n_keys = 1, .target = "toy_broken_backbone",
     .entry = toy_text_provider},
};

static const gufo_option_decl broken_options[] = {
    {.struct_size = sizeof(gufo_option_decl), .name = "broken-level", .type = GUFO_OPTION_INT,
     .commands = GUFO_COMMAND_SERVE, .help = "Only for serve", .default_value = "3"},
};

static const gufo_extension_decl toy_extensions[] = {
    {.struct_size = sizeof(gufo_extension_decl), .name = "toy", .version = "1.2.3",
     .description = "Providers with known behaviour, for the host's tests", .origin = GUFO_ORIGIN_COMMUNITY,
     .source_dir = TOY_SOURCE_DIR, .api_requirement = TOY_REQUIREMENT, .api_minor = GUFO_EXT_API_MINOR,
     .api_revision = GUFO_EXT_API_REVISION, .entry = toy_extension_entry, .providers = toy_providers,
     .n_providers = sizeof toy_providers / sizeof toy_providers[0], .options = toy_options,
     .n_options = sizeof toy_options / sizeof toy_options[0]},
    {.struct_size = sizeof(gufo_extension_decl), .name = "toy_broken", .version = "0.0.1",
     .description = "An extension whose entry fails", .origin = GUFO_ORIGIN_OFFICIAL,
     .source_dir = TOY_SOURCE_DIR, .api_requirement = TOY_REQUIREMENT, .api_minor = GUFO_EXT_API_MINOR,
     .api_revision = GUFO_EXT_API_REVISION, .entry = toy_broken_entry, .providers = broken_providers,
     .n_providers = 1, .options = broken_options, .n_options = 1},
};

gufo_status gufo_registry_populate(gufo_registry *registry, gufo_error *err)
{
    return gufo_registry_load(registry, toy_extensions, sizeof toy_extensions / sizeof toy_extensions[0],
                              GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, err);
}
