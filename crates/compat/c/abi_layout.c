/*
 * Prints the layout of libibumad's public structures as the system headers define them:
 * "<type> size=<n> align=<n>" and "<type>.<field> offset=<n> size=<n>", one per line, in
 * declaration order. (struct umad_ca_pair is HEAD-only and not in Debian's 44.0 headers.)
 *
 * Build: cc -o abi_layout abi_layout.c -libumad -ldl
 */
#include <stdalign.h>
#include <stddef.h>

#include "compat.h"

#define TYPE(t) printf("%s size=%zu align=%zu\n", #t, sizeof(t), alignof(t))
#define FIELD(t, f)                                                            \
	printf("%s.%s offset=%zu size=%zu\n", #t, #f, offsetof(t, f),          \
	       sizeof(((t *)0)->f))

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);

	TYPE(union umad_gid);

	TYPE(ib_mad_addr_t);
	FIELD(ib_mad_addr_t, qpn);
	FIELD(ib_mad_addr_t, qkey);
	FIELD(ib_mad_addr_t, lid);
	FIELD(ib_mad_addr_t, sl);
	FIELD(ib_mad_addr_t, path_bits);
	FIELD(ib_mad_addr_t, grh_present);
	FIELD(ib_mad_addr_t, gid_index);
	FIELD(ib_mad_addr_t, hop_limit);
	FIELD(ib_mad_addr_t, traffic_class);
	FIELD(ib_mad_addr_t, gid);
	FIELD(ib_mad_addr_t, flow_label);
	FIELD(ib_mad_addr_t, pkey_index);
	FIELD(ib_mad_addr_t, reserved);

	TYPE(ib_user_mad_t);
	FIELD(ib_user_mad_t, agent_id);
	FIELD(ib_user_mad_t, status);
	FIELD(ib_user_mad_t, timeout_ms);
	FIELD(ib_user_mad_t, retries);
	FIELD(ib_user_mad_t, length);
	FIELD(ib_user_mad_t, addr);

	TYPE(umad_port_t);
	FIELD(umad_port_t, ca_name);
	FIELD(umad_port_t, portnum);
	FIELD(umad_port_t, base_lid);
	FIELD(umad_port_t, lmc);
	FIELD(umad_port_t, sm_lid);
	FIELD(umad_port_t, sm_sl);
	FIELD(umad_port_t, state);
	FIELD(umad_port_t, phys_state);
	FIELD(umad_port_t, rate);
	FIELD(umad_port_t, capmask);
	FIELD(umad_port_t, gid_prefix);
	FIELD(umad_port_t, port_guid);
	FIELD(umad_port_t, pkeys_size);
	FIELD(umad_port_t, pkeys);
	FIELD(umad_port_t, link_layer);

	TYPE(umad_ca_t);
	FIELD(umad_ca_t, ca_name);
	FIELD(umad_ca_t, node_type);
	FIELD(umad_ca_t, numports);
	FIELD(umad_ca_t, fw_ver);
	FIELD(umad_ca_t, ca_type);
	FIELD(umad_ca_t, hw_ver);
	FIELD(umad_ca_t, node_guid);
	FIELD(umad_ca_t, system_guid);
	FIELD(umad_ca_t, ports);

	TYPE(struct umad_device_node);
	FIELD(struct umad_device_node, next);
	FIELD(struct umad_device_node, ca_name);

	TYPE(struct umad_reg_attr);
	FIELD(struct umad_reg_attr, mgmt_class);
	FIELD(struct umad_reg_attr, mgmt_class_version);
	FIELD(struct umad_reg_attr, flags);
	FIELD(struct umad_reg_attr, method_mask);
	FIELD(struct umad_reg_attr, oui);
	FIELD(struct umad_reg_attr, rmpp_version);
	return 0;
}
