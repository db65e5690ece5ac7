#!/usr/bin/perl
# Net::SMPP (Debian's libnet-smpp-perl) playing the SMSC for Pacer's SMPP
# sink: it accepts one bind_transceiver (system_id "pacer", password
# "secret"), answers each submit_sm with message_id "perl-<n>" and then sends
# a delivery receipt as deliver_sm: the first with the receipted_message_id
# and message_state TLVs, the later ones as text alone ("stat:UNDELIV").
# It writes one line per PDU it handles to LOG and ends on unbind, on a
# closed connection, or after 60 s.
#
# usage: net_smpp_smsc.pl PORT_FILE LOG
use strict;
use warnings;
use Net::SMPP;

my ($port_file, $log_file) = @ARGV;
die "usage: $0 PORT_FILE LOG\n" unless defined $log_file;
alarm 60;

my $srv = Net::SMPP->new_listen('127.0.0.1', port => 0, smpp_version => 0x34, timeout => 10)
    or die "listen: $!";
open my $pf, '>', "$port_file.tmp" or die "$port_file.tmp: $!";
print $pf $srv->sockport, "\n";
close $pf;
rename "$port_file.tmp", $port_file or die "rename: $!";

open my $log, '>', $log_file or die "$log_file: $!";
$log->autoflush(1);

my $c;
until ($c = $srv->accept) { }
my $n = 0;
while (my $pdu = $c->read_pdu) {
    my $cmd = $pdu->{cmd};
    if ($cmd == 0x00000009) {    # bind_transceiver
        my $ok = $pdu->{system_id} eq 'pacer' && $pdu->{password} eq 'secret';
        print $log "bind system_id=$pdu->{system_id} version=", sprintf('%x', $pdu->{interface_version}),
            " ok=", ($ok ? 1 : 0), "\n";
        $c->bind_transceiver_resp(system_id => 'NetSMPP', seq => $pdu->{seq}, status => ($ok ? 0 : 0x0E));
    } elsif ($cmd == 0x00000004) {    # submit_sm
        my $id = sprintf 'perl-%04d', ++$n;
        print $log "submit_sm dest=$pdu->{destination_addr} ton=$pdu->{dest_addr_ton} npi=$pdu->{dest_addr_npi}",
            " source=$pdu->{source_addr} dc=$pdu->{data_coding} regdel=$pdu->{registered_delivery}",
            " text=$pdu->{short_message} validity=$pdu->{validity_period}\n";
        $c->submit_sm_resp(message_id => $id, seq => $pdu->{seq});
        my $text = "id:$id sub:001 dlvrd:001 submit date:2611241530 done date:2611241531 ";
        if ($n == 1) {
            $c->deliver_sm(source_addr => $pdu->{destination_addr}, destination_addr => $pdu->{source_addr},
                esm_class => 0x04, short_message => $text . 'stat:DELIVRD err:000 text:',
                receipted_message_id => "$id\0", message_state => pack('C', 2), async => 1);
        } else {
            $c->deliver_sm(source_addr => $pdu->{destination_addr}, destination_addr => $pdu->{source_addr},
                esm_class => 0x04, short_message => $text . 'stat:UNDELIV err:034 text:', async => 1);
        }
    } elsif ($cmd == 0x80000005) {    # deliver_sm_resp
        print $log "deliver_sm_resp seq=$pdu->{seq} status=$pdu->{status}\n";
    } elsif ($cmd == 0x00000015) {    # enquire_link
        $c->enquire_link_resp(seq => $pdu->{seq});
    } elsif ($cmd == 0x00000006) {    # unbind
        print $log "unbind\n";
        $c->unbind_resp(seq => $pdu->{seq});
        last;
    } else {
        print $log sprintf("other cmd=0x%08x\n", $cmd);
        $c->generic_nack(seq => $pdu->{seq}, status => 0x03) unless $cmd & 0x80000000;
    }
}
close $log;
