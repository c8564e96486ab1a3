// Prints the node id of the active KRaft controller (the metadata quorum's leader), for
// cluster.sh controller. Usage: java -cp 'libs/*' Quorum <bootstrap> <timeoutSeconds>
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class Quorum {
  public static void main(String[] args) throws Exception {
    long deadline = System.currentTimeMillis() + Long.parseLong(args[1]) * 1000L;
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    String last = "no answer";
    try (Admin admin = Admin.create(props)) {
      while (System.currentTimeMillis() < deadline) {
        try {
          System.out.println(admin.describeMetadataQuorum().quorumInfo().get().leaderId());
          System.exit(0);
        } catch (Exception e) {
          last = String.valueOf(e.getCause() != null ? e.getCause() : e);
        }
        Thread.sleep(500);
      }
    }
    System.err.println("no quorum leader: " + last);
    System.exit(1);
  }
}
