#!/usr/bin/perl
# Net::SMPP (Debian's libnet-smpp-perl) as an ESME against pacer-fake-smsc:
# a bind with a wrong password (must be refused), then a transceiver bind
# that submits one message asking for a receipt, waits for the receipt
# (deliver_sm), answers it and unbinds. Prints what it saw as key=value
# lines for the calling test to check.
#
# usage: net_smpp_client.pl PORT
use strict;
use warnings;
use Net::SMPP;

my ($port) = @ARGV;
die "usage: $0 PORT\n" unless $port;
alarm 30;

my ($bad, $bad_resp) = Net::SMPP->new_transceiver('127.0.0.1', port => $port, system_id => 'pacer',
    password => 'wrong', smpp_version => 0x34);
die "connect: $!" unless $bad;
printf "bad_bind_status=0x%02x\n", $bad_resp->{status};
$bad->close;

my ($c, $resp) = Net::SMPP->new_transceiver('127.0.0.1', port => $port, system_id => 'pacer',
    password => 'secret', smpp_version => 0x34);
die "connect: $!" unless $c;
printf "bind_status=0x%02x\n", $resp->{status};
print "bind_system_id=$resp->{system_id}\n";

my $sub = $c->submit_sm(source_addr => 'NetSMPP', destination_addr => '4915112345678',
    short_message => 'hello from Net::SMPP', registered_delivery => 1) or die "submit_sm: no answer";
printf "submit_status=0x%02x\n", $sub->{status};
print "message_id=$sub->{message_id}\n";

while (my $pdu = $c->read_pdu) {
    next unless $pdu->{cmd} == 0x00000005;    # deliver_sm
    my $rid = $pdu->{receipted_message_id} // '';
    $rid =~ s/\0+$//;
    printf "receipt_esm_class=0x%02x\n", $pdu->{esm_class};
    print "receipt_tlv_id=$rid\n";
    my ($text_id) = $pdu->{short_message} =~ /\bid:(\S+)/;
    my ($stat) = $pdu->{short_message} =~ /\bstat:(\S+)/;
    print "receipt_text_id=$text_id\n";
    print "receipt_stat=$stat\n";
    $c->deliver_sm_resp(message_id => '', seq => $pdu->{seq});
    last;
}
my $u = $c->unbind();
printf "unbind_status=0x%02x\n", $u ? $u->{status} : 255;
